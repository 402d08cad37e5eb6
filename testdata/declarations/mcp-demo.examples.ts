// MCP tools under their exact names ("<server>.<name>"), checked by tsc
// --strict against mcp-demo.d.ts.
import type { Tools } from "./mcp-demo";

export const ticket: Tools["crm.create_ticket"]["input"] = { title: "Printer on fire", priority: "high" };
// @ts-expect-error: "urgent" is not a priority
export const urgent: Tools["crm.create_ticket"]["input"] = { title: "Printer on fire", priority: "urgent" };
// @ts-expect-error: priority is required
export const noPriority: Tools["crm.create_ticket"]["input"] = { title: "Printer on fire" };
export const created = (o: Tools["crm.create_ticket"]["output"]): boolean => o.created && o.ticket_id !== "";

export const lookup: Tools["crm.lookup_customer"]["input"] = { customer_id: "C-1" };
// @ts-expect-error: customer_id is a string
export const numericID: Tools["crm.lookup_customer"]["input"] = { customer_id: 1 };
export function tier(o: Tools["crm.lookup_customer"]["output"]): "basic" | "gold" | "platinum" {
  return o.tier;
}
// @ts-expect-error: the server's name, not a TypeScript identifier's spelling
export const renamed: Tools["crm_lookup_customer"] = lookup;
