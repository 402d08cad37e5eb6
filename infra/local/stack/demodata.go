package stack

import (
	"bytes"
	"strings"
)

// OnDataServer returns a Solution's source with every DemoDataAddr
// (127.0.0.1:18080, as testdata/solutions/demo-digest.yaml names its data
// server in fetch_hosts and in its fetch URL) replaced by dataURL's host and
// port, the data server the stack started (Stack.DataURL,
// http://127.0.0.1:<port>). Publishing checks a Solution's fetch_hosts
// against the platform's allow-list, which names only that address.
func OnDataServer(src []byte, dataURL string) []byte {
	return bytes.ReplaceAll(src, []byte(DemoDataAddr), []byte(strings.TrimPrefix(dataURL, "http://")))
}

// OnHTTPService returns a Solution's source with every DemoHTTPAddr
// (127.0.0.1:18081, as testdata/demo/demo-http.yaml names the recording
// HTTP service in http_hosts and in its URL) replaced by serviceURL's host
// and port, the service the stack started (Stack.HTTP.URL(),
// http://127.0.0.1:<port>). Publishing checks a toolset's http_hosts
// against the http function's allow-list, which names only that address.
func OnHTTPService(src []byte, serviceURL string) []byte {
	return bytes.ReplaceAll(src, []byte(DemoHTTPAddr), []byte(strings.TrimPrefix(serviceURL, "http://")))
}
