package functionconfig

// EnvGoMaxProcs is the Go runtime's GOMAXPROCS variable, read once as a
// bootstrap starts: the most threads that run Go code at once (Ps). The
// CDK app sets it on every function from GoMaxProcs of the
// function's memory, and the local stack as the CDK app does
// (docs/performance.md, "One P per function").
const EnvGoMaxProcs = "GOMAXPROCS"

// OneVCPUMemoryMB is the memory, in MB, at which Lambda allocates a
// function the CPU power of one vCPU; it allocates CPU in proportion to
// memory, so below it a function has a fraction of one (AWS Lambda
// Developer Guide, "Configure Lambda function memory").
const OneVCPUMemoryMB = 1769

// GoMaxProcs is the GOMAXPROCS a function of memoryMB MB runs with: "1"
// up to OneVCPUMemoryMB, where a second thread running Go code at once
// gains the function no CPU and costs thread hand-offs on every request
// it sends; "" (the variable unset, the runtime's default: the CPUs the
// process sees) above it. The runtime cannot tell Lambda's allocation
// from the CPUs it sees (docs/performance.md, "One P per function").
func GoMaxProcs(memoryMB int) string {
	if memoryMB <= OneVCPUMemoryMB {
		return "1"
	}
	return ""
}
