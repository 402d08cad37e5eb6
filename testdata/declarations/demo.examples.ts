// The demo toolset's platform tool, checked by tsc --strict against demo.d.ts.
import type { Tools } from "./demo";

export const ticket: Tools["create-ticket"]["input"] = { title: "Disk full", priority: "low", body: "…" };
// @ts-expect-error: title is required
export const untitled: Tools["create-ticket"]["input"] = { priority: "low" };
// @ts-expect-error: "critical" is not a priority
export const critical: Tools["create-ticket"]["input"] = { title: "x", priority: "critical" };
export const id = (o: Tools["create-ticket"]["output"]): string => o.ticket_id;
