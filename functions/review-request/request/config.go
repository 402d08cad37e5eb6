package request

import "github.com/toolgate/toolgate/shared/functionconfig"

// Config is the review-request function's configuration
// (functionconfig.ReviewRequest, which the CDK app checks its
// configuration with).
type Config = functionconfig.ReviewRequest

// DirectPolicy is the platform's configuration of direct-lane reviews:
// the requester never chooses who decides (functionconfig.DirectPolicy).
type DirectPolicy = functionconfig.DirectPolicy

// EnvRegion is the function's region, of the start lane's StartScope;
// Lambda sets it (functionconfig.EnvRegion).
const EnvRegion = functionconfig.EnvRegion

// ConfigFromEnv reads the review-request function's configuration
// (functionconfig.ReviewRequestFromEnv).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	return functionconfig.ReviewRequestFromEnv(getenv)
}
