package cost

import (
	"math"
	"sort"
	"strings"
)

// SESTool is the tool whose successful call sends one SES message
// (shared/sendemail).
const SESTool = "send-email"

// Call is one ledger row as the estimate reads it (the fields of
// ledger.Row it needs, so that this package links no AWS SDK).
type Call struct {
	RunID, Step, Tool, Status, ErrorCode string
	// Seq is the call's seq ("4", or "4.17.2" inside a for_each).
	Seq     string
	Attempt int
	// Invocations is how many invocations the row stands for (a
	// DEDUPLICATED row counts a call's replays); 0 counts as 1.
	Invocations int
	DurationMS  int64 // the invocation's duration, init excluded
	MemoryMB    int   // the function's configured memory; 0 when unknown
	InputBytes  int
	OutputBytes int
	// Gated is true for a tool that needs an approved review.
	Gated bool
}

// Transitions is a run's Step Functions state transitions, when its
// execution history could be read.
type Transitions struct {
	Available bool `json:"available"`
	// Reason says why they are not available.
	Reason string `json:"reason,omitempty"`
	Count  int    `json:"state_transitions"`
}

// Report is the estimated cost of one run: per tool, the Step Functions
// execution, and the total. Every figure in it is an estimate.
type Report struct {
	RunID    string      `json:"run_id"`   // set by the caller
	Estimate bool        `json:"estimate"` // always true
	Note     string      `json:"note"`
	Prices   PriceSource `json:"prices"`
	Tools    []Usage     `json:"tools"` // by tool name
	// StepFunctions is the execution's state transitions and their price.
	StepFunctions StepFunctions `json:"step_functions"`
	Total         Usage         `json:"total"`
}

// PriceSource names the price table an estimate used.
type PriceSource struct {
	Source  string   `json:"source"` // BuiltinSource or a file
	Region  string   `json:"region"`
	AsOf    string   `json:"as_of"`
	Sources []string `json:"sources"`
}

// StepFunctions is the estimate of a run's Standard workflow execution.
type StepFunctions struct {
	Estimate bool `json:"estimate"`
	Transitions
	USD float64 `json:"usd"`
}

// Usage is the estimated resources and price of one tool's invocations in
// a run, or of all of them (Tool empty).
type Usage struct {
	Tool            string  `json:"tool,omitempty"`
	Estimate        bool    `json:"estimate"` // always true
	Invocations     int     `json:"invocations"`
	LambdaGBSeconds float64 `json:"lambda_gb_seconds"`
	LambdaRequests  int     `json:"lambda_requests"`
	WriteUnits      int     `json:"dynamodb_write_request_units"`
	ReadUnits       int     `json:"dynamodb_read_request_units"`
	SESMessages     int     `json:"ses_messages"`
	// StateTransitions is set on the total only, when they are available.
	StateTransitions *int `json:"sfn_state_transitions,omitempty"`
	// MemoryUnknown counts invocations whose row has no memory_mb: their
	// GB-seconds are not in LambdaGBSeconds.
	MemoryUnknown int `json:"memory_unknown,omitempty"`
	USD           USD `json:"usd"`
}

// USD is a price in US dollars, by what it pays for.
type USD struct {
	LambdaRequests float64 `json:"lambda_requests"`
	LambdaDuration float64 `json:"lambda_duration"`
	DynamoDBWrites float64 `json:"dynamodb_writes"`
	DynamoDBReads  float64 `json:"dynamodb_reads"`
	SES            float64 `json:"ses"`
	StepFunctions  float64 `json:"step_functions"`
	Total          float64 `json:"total"`
}

// Note is the label every report carries.
const Note = "every figure is an estimate, not a bill: Lambda GB-seconds from memory_mb × duration_ms (init excluded), " +
	"DynamoDB units from the dispatcher's requests per outcome and estimated item sizes, list prices of one region without free tiers"

// Estimate prices the calls and the state transitions of run runID with p.
func Estimate(runID string, calls []Call, tr Transitions, p *Prices) *Report {
	byTool := map[string]*Usage{}
	for _, c := range calls {
		u := byTool[c.Tool]
		if u == nil {
			u = &Usage{Tool: c.Tool, Estimate: true}
			byTool[c.Tool] = u
		}
		u.add(usageOf(c))
	}
	r := &Report{RunID: runID, Estimate: true, Note: Note, Tools: []Usage{}, Total: Usage{Estimate: true},
		Prices: PriceSource{Source: p.Source(), Region: p.Region, AsOf: p.AsOf, Sources: p.Sources}}
	for _, u := range byTool {
		u.price(p, 0)
		r.Tools = append(r.Tools, *u)
		r.Total.add(*u)
	}
	sort.Slice(r.Tools, func(i, j int) bool { return r.Tools[i].Tool < r.Tools[j].Tool })
	r.StepFunctions = StepFunctions{Estimate: true, Transitions: tr}
	if tr.Available {
		r.StepFunctions.USD = roundTiny(float64(tr.Count) * p.TransitionsPerThousand / 1e3)
		n := tr.Count
		r.Total.StateTransitions = &n
	}
	r.Total.price(p, r.StepFunctions.USD)
	return r
}

// usageOf is one row's resources (unpriced).
func usageOf(c Call) Usage {
	n := max(c.Invocations, 1)
	u := Usage{Invocations: n, LambdaRequests: n}
	if c.MemoryMB > 0 {
		u.LambdaGBSeconds = GBSeconds(c.MemoryMB, c.DurationMS) * float64(n)
	} else {
		u.MemoryUnknown = n
	}
	w, r := Units(c)
	u.WriteUnits, u.ReadUnits = w*n, r*n
	if c.Tool == SESTool && c.Status == "SUCCEEDED" {
		u.SESMessages = n
	}
	return u
}

// GBSeconds is Lambda's compute: memoryMB/1024 GB for durationMS/1000 s.
func GBSeconds(memoryMB int, durationMS int64) float64 {
	return float64(memoryMB) / 1024 * float64(durationMS) / 1000
}

// Units estimates the DynamoDB write and read request units of one
// invocation of c: for each request of its outcome in
// RequestsPerInvocation, a write of an item of N bytes costs ceil(N/1 KB)
// write units and a strongly consistent read ceil(N/4 KB) read units (at
// least one each).
func Units(c Call) (write, read int) {
	reqs := RequestsPerInvocation[OutcomeOf(c)]
	all := reqs.Ledger
	if c.Gated {
		all = append(append([]Request(nil), all...), reqs.Gated...)
	}
	for _, q := range all {
		size := itemBytes(q.Item, c)
		if q.Write {
			write += units(size, 1024)
		} else {
			read += units(size, 4096)
		}
	}
	return write, read
}

func units(size, per int) int { return max(1, (size+per-1)/per) }

func (u *Usage) add(o Usage) {
	u.Invocations += o.Invocations
	u.LambdaGBSeconds += o.LambdaGBSeconds
	u.LambdaRequests += o.LambdaRequests
	u.WriteUnits += o.WriteUnits
	u.ReadUnits += o.ReadUnits
	u.SESMessages += o.SESMessages
	u.MemoryUnknown += o.MemoryUnknown
}

// price prices u with p; stepFunctions is the execution's price, added
// to the total's.
func (u *Usage) price(p *Prices, stepFunctions float64) {
	u.LambdaGBSeconds = roundTiny(u.LambdaGBSeconds)
	u.USD = USD{
		LambdaRequests: roundTiny(float64(u.LambdaRequests) * p.LambdaPerMillionRequests / 1e6),
		LambdaDuration: roundTiny(u.LambdaGBSeconds * p.LambdaPerGBSecond),
		DynamoDBWrites: roundTiny(float64(u.WriteUnits) * p.WritesPerMillionUnits / 1e6),
		DynamoDBReads:  roundTiny(float64(u.ReadUnits) * p.ReadsPerMillionUnits / 1e6),
		SES:            roundTiny(float64(u.SESMessages) * p.SESPerThousandMessages / 1e3),
		StepFunctions:  stepFunctions,
	}
	u.USD.Total = roundTiny(u.USD.LambdaRequests + u.USD.LambdaDuration + u.USD.DynamoDBWrites + u.USD.DynamoDBReads + u.USD.SES + stepFunctions)
}

// StateTransitions counts the state transitions Step Functions bills a
// Standard workflow execution for, from the types of its history events:
// one per state entered (every "…StateEntered" event), and one per retry
// of a Task (each TaskScheduled after the first of a Task state entered),
// as https://aws.amazon.com/step-functions/pricing/ says retries are
// charged as additional state transitions.
func StateTransitions(eventTypes []string) int {
	entered, tasks, scheduled := 0, 0, 0
	for _, t := range eventTypes {
		switch {
		case t == "TaskStateEntered":
			entered++
			tasks++
		case strings.HasSuffix(t, "StateEntered"):
			entered++
		case t == "TaskScheduled":
			scheduled++
		}
	}
	return entered + max(0, scheduled-tasks)
}

// roundTiny keeps float sums such as 0.1+0.2 from printing as
// 0.30000000000000004: figures are rounded to 1e-12 (of a dollar, of a
// GB-second), far below any list price.
func roundTiny(v float64) float64 { return math.Round(v*1e12) / 1e12 }
