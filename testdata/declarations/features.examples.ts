// The JSON Schema subset's features (features.tools.json), checked by tsc
// --strict against features.d.ts.
import type { Tools } from "./features";

type In<N extends keyof Tools> = Tools[N]["input"];

// Tuples.
export const tuple: In<"tuple"> = { pair: ["a", 1], at_least_two: [1, 2, 3], open: ["x", 1, {}] };
export const full: In<"tuple"> = { pair: ["a", 1, true], at_least_two: [1, 2] };
// @ts-expect-error: the pair's items are closed after three
export const long: In<"tuple"> = { pair: ["a", 1, true, 4], at_least_two: [1, 2] };
// @ts-expect-error: at_least_two holds two numbers at least
export const one: In<"tuple"> = { pair: ["a", 1], at_least_two: [1] };
// @ts-expect-error: the pair's second item is a number
export const swapped: In<"tuple"> = { pair: [1, "a"], at_least_two: [1, 2] };

// References: a recursive tree.
export const tree: In<"refs"> = { name: "root", children: [{ name: "leaf", children: [] }] };
// @ts-expect-error: a child needs its name
export const nameless: In<"refs"> = { name: "root", children: [{}] };
// @ts-expect-error: closed at every level
export const extra: In<"refs"> = { name: "root", children: [{ name: "leaf", size: 1 }] };
// @ts-expect-error: a $ref's closed object stays closed beside type: object
export const typedExtra: In<"refs"> = { name: "root", typed: { name: "child", size: 1 } };
export const typed: In<"refs"> = { name: "root", typed: { name: "child" } };
export const point: Tools["refs"]["output"] = { at: [1, 2] };
// @ts-expect-error: a point has two coordinates, no more
export const point3: Tools["refs"]["output"] = { at: [1, 2, 3] };

// oneOf of required sets; const; type arrays.
export const byID: In<"choice"> = { kind: "x", id: "a" };
export const byEmail: In<"choice"> = { kind: "x", email: "a@example.com", n: null };
// @ts-expect-error: one of id and email is required
export const neither: In<"choice"> = { kind: "x" };
// @ts-expect-error: exactly one of id and email (oneOf)
export const both: In<"choice"> = { kind: "x", id: "a", email: "a@example.com" };
// @ts-expect-error: kind is the constant "x"
export const otherKind: In<"choice"> = { kind: "y", id: "a" };
// @ts-expect-error: n is a number or null
export const stringN: In<"choice"> = { kind: "x", id: "a", n: "1" };
export const result = (o: Tools["choice"]["output"]): string => ("ok" in o ? "ok" : o.error);

// Index signatures.
export const maps: In<"maps"> = { labels: { team: "a", size: 3, extra: "b" }, env: { HOME: "/" }, anything: { a: 1 }, nothing: {}, flag: [1] };
// @ts-expect-error: other labels are strings (or, as TypeScript needs, of a member's type)
export const numberLabel: In<"maps"> = { labels: { team: "a", extra: true } };
// @ts-expect-error: an empty closed object has no members
export const something: In<"maps"> = { labels: { team: "a" }, nothing: { a: 1 } };
// @ts-expect-error: a false schema admits nothing
export const never: In<"maps"> = { labels: { team: "a" }, never: 1 };

// A closed object refuses the members another conjunct (allOf, anyOf,
// oneOf) declares.
export const closedBase: In<"closed_allof"> = { base: { a: "x" }, typed: { a: 1 } };
// @ts-expect-error: b is declared by an allOf branch, refused by the closed base
export const closedBaseB: In<"closed_allof"> = { base: { b: "x" } };
// @ts-expect-error: the closed allOf branch refuses b, which the other branch requires
export const closedBranchB: In<"closed_allof"> = { branch: { b: "x" } };
// @ts-expect-error: the closed allOf branch refuses a member nothing declares
export const closedBranchC: In<"closed_allof"> = { branch: { n: 1, c: 1 } };
// @ts-expect-error: a is admitted by the closed branch and of the additional properties' type
export const typedA: In<"closed_allof"> = { typed: { a: "x" } };
// @ts-expect-error: the closed branch admits only a
export const typedB: In<"closed_allof"> = { typed: { b: 1 } };
export const choiceId: In<"closed_allof"> = { choice: { id: "x" } };
// @ts-expect-error: email is required by the other alternative, refused by the closed object
export const choiceEmail: In<"closed_allof"> = { choice: { email: "x" } };
