// Inputs and outputs of the catalog's tools, checked by tsc --strict
// against catalog.d.ts (resolver/declare, TestTypeScriptExamplesTypeCheck).
// Each line under a // @ts-expect-error marker must be refused.
import type { Tools, ToolName } from "./catalog";

type In<N extends ToolName> = Tools[N]["input"];
type Out<N extends ToolName> = Tools[N]["output"];

// http
export const get: In<"http"> = { method: "GET", url: "https://api.example.com/items", accept: "json", headers: { "X-Team": "a" } };
export const post: In<"http"> = { method: "POST", url: "https://api.example.com/items", body: { any: ["json"] }, select: "/items" };
// @ts-expect-error: "FETCH" is not one of http's methods
export const badMethod: In<"http"> = { method: "FETCH", url: "https://api.example.com/" };
// @ts-expect-error: url is required
export const noURL: In<"http"> = { method: "GET" };
// @ts-expect-error: a header's value is a string
export const numberHeader: In<"http"> = { method: "GET", url: "https://a.example/", headers: { "X-Count": 3 } };
export function status(o: Out<"http">): number {
  return o.status + o.bytes + (o.headers["Retry-After"] === undefined ? 0 : 1);
}
// @ts-expect-error: http's output headers are closed
export const unknownHeader = (o: Out<"http">) => o.headers["Set-Cookie"];

// send-email
export const text: In<"send-email"> = { to: ["a@example.com"], subject: "Hello", text: "Hi." };
export const html: In<"send-email"> = { to: ["a@example.com", "b@example.com"], cc: [], subject: "Hello", html: "<p>Hi.</p>" };
export const both: In<"send-email"> = { to: ["a@example.com"], subject: "Hello", text: "Hi.", html: "<p>Hi.</p>" };
// @ts-expect-error: neither text nor html
export const neither: In<"send-email"> = { to: ["a@example.com"], subject: "Hello" };
// @ts-expect-error: a number in to
export const numberTo: In<"send-email"> = { to: [42], subject: "Hello", text: "Hi." };
// @ts-expect-error: to holds at least one address
export const noRecipient: In<"send-email"> = { to: [], subject: "Hello", text: "Hi." };
// @ts-expect-error: an unknown member under additionalProperties false
export const unknownMember: In<"send-email"> = { to: ["a@example.com"], subject: "Hello", text: "Hi.", attachments: [] };
// @ts-expect-error: subject is required
export const noSubject: In<"send-email"> = { to: ["a@example.com"], text: "Hi." };
// @ts-expect-error: text is a string
export const numberText: In<"send-email"> = { to: ["a@example.com"], subject: "Hello", text: 1 };
export const messageID = (o: Out<"send-email">): string => o.message_id;

// structured-data-fetch
export const fetchCSV: In<"structured-data-fetch"> = { url: "https://data.example.com/x.csv", accept: "csv", headers: { Accept: "text/csv" } };
// @ts-expect-error: "xml" is not an accept value
export const fetchXML: In<"structured-data-fetch"> = { url: "https://data.example.com/x", accept: "xml" };
// @ts-expect-error: only the four listed request headers
export const fetchCookie: In<"structured-data-fetch"> = { url: "https://data.example.com/x", headers: { Cookie: "a=b" } };
export const fetched = (o: Out<"structured-data-fetch">): unknown => o.data;

// workflow-validator
export const validate: In<"workflow-validator"> = { solution: "name: x", format: "yaml" };
// @ts-expect-error: solution is required
export const noSolution: In<"workflow-validator"> = { format: "json" };
export function firstRule(o: Out<"workflow-validator">): string | undefined {
  const d = o.diagnostics[0];
  // @ts-expect-error: severity is "error" or "warning"
  const info: typeof d.severity = "info";
  return o.valid ? undefined : d?.rule + info;
}

export const names: ToolName[] = ["http", "send-email", "structured-data-fetch", "workflow-validator"];
// @ts-expect-error: no such tool
export const noTool: ToolName = "send_email";
