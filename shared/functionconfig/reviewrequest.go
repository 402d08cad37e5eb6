package functionconfig

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/reviewer"
	"github.com/toolgate/toolgate/shared/tool"
)

// ReviewRequest is the review-request function's configuration
// (functions/review-request/request.Config).
type ReviewRequest struct {
	Table   string
	Lane    lane.Lane // fixed on the local stack only
	Callers caller.Config
	Direct  DirectPolicy
	// Region (EnvRegion) and Stage (tool.EnvStage) are, with Callers.Account,
	// the start lane's StartScope.
	Region, Stage string
	// ExternalKeyParam names the stage's external key (EnvExternalKeyParam,
	// ExternalKeyParam), the one secret review-request reads: a run's
	// trace id is derived under it (shared/tracecontext), for a review's
	// place in its run's trace and a child run's traceparent.
	ExternalKeyParam string
	// EndUsers is the end-user mapping (shared/enduser EnvMapping, with
	// the deployment's account): which verified starters a run's start
	// records an end user for.
	EndUsers enduser.Mapping
	// EndUserKeyParam names the stage's end-user key (enduser.EnvKeyParam,
	// EndUserKeyParam), under which an end user's scope is computed; ""
	// (allowed only while EndUsers is empty): no run acts for an end user.
	EndUserKeyParam string
	// Notices are the review notices' allow-list and sender
	// (ReviewNoticesFromEnv); the zero value sends none.
	Notices ReviewNotices
}

// EnvRegion is the function's region, of the start lane's StartScope;
// Lambda sets it. Its stage is tool.EnvStage (required).
const EnvRegion = "AWS_REGION"

// DirectPolicy is the platform's configuration of direct-lane reviews:
// the requester never chooses who decides.
type DirectPolicy struct {
	// Reviewers are the reviewer patterns per tool; a gated tool without
	// any cannot be called on the direct lane.
	Reviewers map[string][]string
	// MaxTimeoutSeconds caps a direct-lane review's timeout.
	MaxTimeoutSeconds int
}

// ReviewRequestFromEnv reads the review-request function's configuration
// through getenv: review.EnvTable, EnvRegion and EnvExternalKeyParam
// (required), tool.EnvStage (required), the lane (lane.FromEnv), the caller proofs'
// (caller.ConfigFromEnv), review.EnvDirectReviewers (a JSON object from
// tool name to at most reviewer.MaxReviewers patterns, each
// reviewer.CheckPattern's), the end-user mapping (enduser.FromEnv) and
// its key's parameter (enduser.EnvKeyParam, required when the mapping has
// entries) and review.EnvDirectMaxTimeout (whole seconds,
// 1..review.MaxTimeout; default review.DefaultDirectMaxTimeout) and the
// review notices (ReviewNoticesFromEnv). The first problem is the error.
func ReviewRequestFromEnv(getenv func(string) string) (ReviewRequest, error) {
	cfg := ReviewRequest{Table: getenv(review.EnvTable), Direct: DirectPolicy{MaxTimeoutSeconds: review.DefaultDirectMaxTimeout},
		Region: getenv(EnvRegion)}
	if cfg.Table == "" {
		return cfg, fmt.Errorf("%s is not set", review.EnvTable)
	}
	if cfg.Region == "" {
		return cfg, fmt.Errorf("%s is not set", EnvRegion)
	}
	if cfg.ExternalKeyParam = getenv(EnvExternalKeyParam); cfg.ExternalKeyParam == "" {
		return cfg, fmt.Errorf("%s is not set", EnvExternalKeyParam)
	}
	var err error
	if cfg.Stage, err = tool.StageFromEnv(getenv); err != nil {
		return cfg, err
	}
	if cfg.Lane, err = lane.FromEnv(getenv, lane.Start); err != nil {
		return cfg, err
	}
	if cfg.Callers, err = caller.ConfigFromEnv(getenv); err != nil {
		return cfg, err
	}
	if v := getenv(review.EnvDirectReviewers); v != "" {
		if err := json.Unmarshal([]byte(v), &cfg.Direct.Reviewers); err != nil {
			return cfg, fmt.Errorf("%s is not a JSON object from tool to reviewer patterns: %v", review.EnvDirectReviewers, err)
		}
		for t, ps := range cfg.Direct.Reviewers {
			if len(ps) > reviewer.MaxReviewers {
				return cfg, fmt.Errorf("%s: tool %s has %d reviewers, over %d", review.EnvDirectReviewers, t, len(ps), reviewer.MaxReviewers)
			}
			for _, p := range ps {
				if err := reviewer.CheckPattern(p); err != nil {
					return cfg, fmt.Errorf("%s: tool %s: %v", review.EnvDirectReviewers, t, err)
				}
			}
		}
	}
	if cfg.EndUsers, err = enduser.FromEnv(getenv, cfg.Callers.Account); err != nil {
		return cfg, err
	}
	if cfg.EndUserKeyParam = getenv(enduser.EnvKeyParam); cfg.EndUserKeyParam == "" && len(cfg.EndUsers.Entries) > 0 {
		return cfg, fmt.Errorf("%s is not set, but %s names entries: an end user's scope is computed under the end-user key", enduser.EnvKeyParam, enduser.EnvMapping)
	}
	if v := getenv(review.EnvDirectMaxTimeout); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > review.MaxTimeout {
			return cfg, fmt.Errorf("%s=%q is not a whole number of seconds in 1..%d", review.EnvDirectMaxTimeout, v, review.MaxTimeout)
		}
		cfg.Direct.MaxTimeoutSeconds = n
	}
	if cfg.Notices, err = ReviewNoticesFromEnv(getenv); err != nil {
		return cfg, err
	}
	return cfg, nil
}
