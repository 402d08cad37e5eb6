// Package toolfunction is the CDK construct a platform team deploys its
// tool function with, so that a toolgate stage's platform tools' proxy
// (functions/lambda-tool) may invoke it: New tags the function with its
// stage (TagKey) and its floor (toolfloor.Floor), allows only the
// proxy's role to invoke it, and writes its ARN to the SSM parameter a
// toolset file's ${Function<Tool>} placeholder resolves from
// (docs/infra.md, "Platform tools").
//
// It also holds the proxy's statements that the tag bounds
// (InvokeStatement, FloorsStatement, ParametersStatement), which the
// platform's own stack gives the proxy's and the publish function's
// roles. It links the CDK and pure toolgate packages only, no AWS SDK
// client: a team's CDK app imports it (examples/team-tool-cdk).
package toolfunction
