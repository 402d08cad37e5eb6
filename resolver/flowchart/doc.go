// Package flowchart draws a Solution's step graph (resolver.StepGraph) as
// a Mermaid flowchart or a Graphviz DOT digraph, for `toolgate graph`.
//
// Each step is a node whose shape and first lines say its kind; a gated
// tool step has a thick border; the edges a step is left by on_error,
// on_reject and on_timeout are dotted and coloured apart from its next;
// a for_each's body is a subgraph (a DOT cluster) with its own end, the
// end of an iteration. The paths the resolver's [review-before-tool] and
// [no-fallback] diagnostics name (resolver.RefusedPath) are drawn red and
// thick. docs/solutions.md §4.4 shows one.
//
// Every text that comes from the Solution (step ids, tool names, choice
// rules, error codes, fail errors) is escaped (mermaidText, dotText), so
// that no Solution can end a label early or add statements of its own,
// and its invisible and bidirectional characters (shared/invisible) are
// written out as \u{X}, so that no label reorders what it shows; node ids
// are made here, never taken from the Solution unchecked.
package flowchart
