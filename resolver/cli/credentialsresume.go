package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/toolgate/toolgate/shared/invisible"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/review"
)

// parkedOnStatus is the park.list status the calls parked on a credential
// are listed under.
const parkedOnStatus = "parked"

// reviewFunction names the review-decision function a credentials set
// resumes parked calls through: its Function URL (AWS) or, on the local
// stack, the function under the RIE (with the set's --as).
type reviewFunction struct {
	url, endpoint string
}

// call sends req to the function: under the RIE when endpoint is named,
// else to the Function URL's /parks routes.
func (a *app) callReviewFunction(ctx context.Context, f reviewFunction, req review.DirectRequest) ([]byte, string, string, error) {
	if f.endpoint != "" {
		return a.callDecisionRIE(ctx, f.endpoint, req)
	}
	return a.callParkURL(ctx, f.url, req)
}

// resumeParkedOn resumes, once each, the calls parked on the credential
// set just stored (res: its target and scope; docs/parking.md, "Deciding"):
// it lists the PARKED parks the caller may decide through review-decision
// (park.list), keeps those of cause credentials.expired whose target and
// scope are the set's and whose deadline has not passed, and resumes each
// (park.decide resume), every request with a caller proof of its own,
// signed by the setter (as: local keys, or the caller's AWS credentials).
// A park is matched by target and scope, as its park_scope_key holds them:
// a park of another toolset name's target of the same name is resumed
// too, and parks again when its own credential is still expired (within
// park.MaxParks). What it did goes to stdout, one line per park; a park
// whose resume is refused, or a list that fails, to stderr: the set is
// stored either way, so none of this changes the command's exit code.
// With no review-decision function named, it says so and resumes nothing.
func (a *app) resumeParkedOn(f reviewFunction, as string, res *publishapi.CredentialSetResult, stdout, stderr io.Writer) {
	const name = "toolgate credentials set"
	if f.url == "" && f.endpoint == "" {
		fmt.Fprintf(stderr, "%s: note: calls parked on this credential were not looked for: name review-decision (--review-url, $%s; --review-endpoint on the local stack) to resume them, or run toolgate parked resume\n", name, EnvReviewURL)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := a.newProver(ctx, as)
	if err != nil {
		fmt.Fprintf(stderr, "%s: parked calls not resumed: %v\n", name, err)
		return
	}
	list := review.DirectRequest{Action: review.ActionParkList, Status: parkedOnStatus}
	if list.Proof, err = p.sign(ctx, review.ParkListBinding(list.Status)); err != nil {
		fmt.Fprintf(stderr, "%s: parked calls not resumed: %v\n", name, err)
		return
	}
	out, code, msg, err := a.callReviewFunction(ctx, f, list)
	var listed park.ListResult
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "%s: parked calls not listed: %v\n", name, err)
		return
	case code != "":
		fmt.Fprintf(stderr, "%s: parked calls not listed: %s: %s\n", name, code, invisible.Escape(msg))
		return
	case json.Unmarshal(out, &listed) != nil:
		fmt.Fprintf(stderr, "%s: parked calls not listed: unexpected answer from review-decision\n", name)
		return
	}
	resumed := 0
	for _, v := range listed.Parks {
		if v.Cause != park.CredentialsExpired || v.Target != res.Target || v.Scope != res.Scope || v.Expired {
			continue
		}
		req := review.DirectRequest{Action: review.ActionParkDecide, ParkID: v.ParkID, Decision: review.Verdict(park.Resume)}
		if req.Proof, err = p.sign(ctx, review.ParkDecideBinding(v.ParkID, string(park.Resume), v.CurrentDigest)); err != nil {
			fmt.Fprintf(stderr, "%s: park %s not resumed: %v\n", name, v.ParkID, err)
			continue
		}
		out, code, msg, err := a.callReviewFunction(ctx, f, req)
		var d park.DecideResult
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "%s: park %s not resumed: %v\n", name, v.ParkID, err)
		case code != "":
			fmt.Fprintf(stderr, "%s: park %s not resumed: %s: %s\n", name, v.ParkID, code, invisible.Escape(msg))
		case json.Unmarshal(out, &d) != nil || d.Status != park.StatusResumed:
			fmt.Fprintf(stderr, "%s: park %s not resumed: unexpected answer from review-decision\n", name, v.ParkID)
		default:
			resumed++
			fmt.Fprintf(stdout, "resumed park %s: run %s, step %s, tool %s\n", v.ParkID, invisible.Escape(v.RunID), invisible.Escape(v.Step), invisible.Escape(v.Tool))
		}
	}
	if resumed == 0 {
		fmt.Fprintf(stdout, "no call waits on this credential\n")
	}
}
