package platform

import (
	"slices"
	"strconv"
	"strings"
)

// The template's identity policies as the tests read them, and a small
// evaluator of them: which statements allow a request, as IAM evaluates
// DynamoDB's condition keys.

// principalStatements returns every principal's identity policy
// statements: a function role by its function's name, the Solution
// execution role as solution-execution, a managed policy by its name
// without toolgate-<stage>- (publisher, reviewer, operator).
func principalStatements(pj tmpl) map[string][]tmpl {
	byRole := map[string]string{} // role logical ID without hash: principal
	for _, spec := range functionSpecs {
		byRole[symbol(roleOf(pj, spec.LogicalID))] = spec.Name
	}
	byRole["SolutionExecutionRole"] = "solution-execution"
	name := func(role string) string {
		if n, ok := byRole[role]; ok {
			return n
		}
		return role
	}
	out := map[string][]tmpl{}
	for _, p := range resources(pj, "AWS::IAM::Policy") {
		for _, r := range props(p)["Roles"].([]any) {
			role := strings.TrimSuffix(strings.TrimPrefix(text(r), "${"), "}")
			out[name(role)] = append(out[name(role)], statements(props(p)["PolicyDocument"])...)
		}
	}
	for id, r := range resources(pj, "AWS::IAM::Role") {
		if inline, ok := props(r)["Policies"].([]any); ok {
			for _, p := range inline {
				out[name(symbol(id))] = append(out[name(symbol(id))], statements(p.(tmpl)["PolicyDocument"])...)
			}
		}
	}
	for _, p := range resources(pj, "AWS::IAM::ManagedPolicy") {
		n := strings.TrimPrefix(text(props(p)["ManagedPolicyName"]), "toolgate-test-")
		out[n] = append(out[n], statements(props(p)["PolicyDocument"])...)
	}
	return out
}

// conditionValues returns the values a statement's condition allows for a
// multivalued DynamoDB key (under ForAllValues:StringLike or
// ForAllValues:StringEquals), and whether it restricts the key at all.
func conditionValues(s tmpl, key string) ([]string, bool) {
	c, _ := s["Condition"].(tmpl)
	for _, op := range []string{"ForAllValues:StringLike", "ForAllValues:StringEquals"} {
		if block, ok := c[op].(tmpl); ok {
			if v, ok := block[key]; ok {
				return strs(v), true
			}
		}
	}
	return nil, false
}

// allowsAction: statement s (an Allow) allows action a in any form (IAM's
// wildcards and letter case, NotAction).
func allowsAction(s tmpl, a string) bool {
	match := func(p string) bool { return wildcardMatch(p, a, true) }
	if na, ok := s["NotAction"]; ok {
		return !slices.ContainsFunc(strs(na), match)
	}
	return slices.ContainsFunc(strs(s["Action"]), match)
}

// policyStatementsOf returns the statements (as the template holds them,
// for test-only mutations) of the role of the function with logical ID fn.
func policyStatementsOf(pj tmpl, fn string) []tmpl {
	role := symbol(roleOf(pj, fn))
	for _, p := range resources(pj, "AWS::IAM::Policy") {
		if text(props(p)["Roles"]) == `["${`+role+`}"]` {
			return statements(props(p)["PolicyDocument"])
		}
	}
	panic("no policy for " + fn)
}

// allowedBy returns the statements of stmts that allow request r: an
// Allow whose actions and resources match it and whose every condition
// holds, as IAM evaluates DynamoDB's condition keys (a ForAllValues
// operator holds for a key the request does not carry; a plain operator
// does not, unless IfExists). No statement here uses Deny.
func allowedBy(stmts []tmpl, r ddbRequest) []tmpl {
	var out []tmpl
	for _, s := range stmts {
		if s["Effect"] != "Allow" || !allowsAction(s, r.Action) {
			continue
		}
		if _, ok := s["NotResource"]; ok || !slices.ContainsFunc(strs(s["Resource"]), func(p string) bool { return wildcardMatch(p, r.Resource, false) }) {
			continue
		}
		if conditionsHold(s, r) {
			out = append(out, s)
		}
	}
	return out
}

func conditionsHold(s tmpl, r ddbRequest) bool {
	context := map[string][]string{"dynamodb:LeadingKeys": r.LeadingKeys, "dynamodb:Attributes": r.Attributes}
	if r.ReturnValues != "" {
		context["dynamodb:ReturnValues"] = []string{r.ReturnValues}
	}
	if r.Select != "" {
		context["dynamodb:Select"] = []string{r.Select}
	}
	return conditionsHoldFor(s, context, r.Whole)
}

// conditionsHoldFor evaluates statement s's conditions on the request
// context (condition key: values). whole marks a read of every attribute
// (ddbRequest.Whole): a list of dynamodb:Attributes holds for it only when
// a pattern is "*". Bool and ArnLike compare as StringEquals and
// StringLike do.
func conditionsHoldFor(s tmpl, context map[string][]string, whole bool) bool {
	c, _ := s["Condition"].(tmpl)
	for op, block := range c {
		for key, want := range block.(tmpl) {
			patterns := strs(want)
			got, present := context[key]
			present = present && len(got) > 0
			base := strings.TrimSuffix(op, "IfExists")
			like := strings.HasSuffix(base, "Like")
			match := func(v string) bool {
				return slices.ContainsFunc(patterns, func(p string) bool { return like && wildcardMatch(p, v, false) || p == v })
			}
			var holds bool
			switch op {
			case "ForAllValues:StringLike", "ForAllValues:StringEquals":
				holds = !slices.ContainsFunc(got, func(v string) bool { return !match(v) })
				if key == "dynamodb:Attributes" && whole {
					holds = holds && slices.Contains(patterns, "*")
				}
			case "StringEquals", "StringLike", "Bool", "ArnLike", "ArnEquals":
				holds = present && len(got) == 1 && match(got[0])
			case "StringEqualsIfExists", "StringLikeIfExists", "BoolIfExists", "ArnLikeIfExists":
				holds = !present || len(got) == 1 && match(got[0])
			case "Null":
				// "true": the key is absent; "false": it is present.
				holds = len(patterns) == 1 && patterns[0] == strconv.FormatBool(!present)
			default:
				holds = false // an operator this evaluator does not know allows nothing here
			}
			if !holds {
				return false
			}
		}
	}
	return true
}
