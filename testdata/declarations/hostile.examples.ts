// Names, descriptions and schemas written to escape their strings and
// comments (hostile.tools.json) declared nothing but their tools: checked
// by tsc --strict against hostile.d.ts.
import type { Tools, ToolName } from "./hostile";
// @ts-expect-error: the descriptions' "export declare const injected" declared nothing
import { injected } from "./hostile";

export const shown = injected;
export const names: ToolName[] = ["note */ export declare const injected: true; /*", "a\"b\\c\u202e"];
export const input: Tools["note */ export declare const injected: true; /*"]["input"] = { "a\"b": "ab", "*/": "\u2028" };
// @ts-expect-error: "a\"b" is required
export const missing: Tools["note */ export declare const injected: true; /*"]["input"] = { "*/": "back\\slash" };
// @ts-expect-error: the enum's values are the schema's, exactly
export const notInEnum: Tools["note */ export declare const injected: true; /*"]["input"] = { "a\"b": "ab", "*/": "*/" };
export const separator: Tools["a\"b\\c\u202e"]["input"] = { x: "\u2029" };
