// Package changelog reads CHANGELOG.md in the form Keep a Changelog 1.1.0
// gives it (https://keepachangelog.com/en/1.1.0/): the version it names
// is what toolgate version prints, and a test holds the file to that form
// and its newest release to the newest git tag (docs/design.md,
// "Versions").
package changelog
