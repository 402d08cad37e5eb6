// Learned shapes (@observed), checked by tsc --strict against
// observed.d.ts: a member seen in the results type-checks, one never seen
// or of another type does not.
import type { Tools, ObservedData } from "./observed";

export const segments = (o: Tools["crm.send_sms"]["output"]): number => o.segments;
export const carrier = (o: Tools["crm.send_sms"]["output"]): string | undefined => o.carrier?.country;
// @ts-expect-error: message_id was always a string
export const numericID = (o: Tools["crm.send_sms"]["output"]): number => o.message_id;
export const sms: Tools["crm.send_sms"]["output"] = { message_id: "m", segments: 1, queued: true };
// @ts-expect-error: segments was seen in every result: required
export const noSegments: Tools["crm.send_sms"]["output"] = { message_id: "m", queued: true };

type Items = ObservedData["structured-data-fetch"]["api.example.com"];
export const firstPrice = (d: Items): number | undefined => d.items[0]?.price;
// @ts-expect-error: items was always a list
export const itemsName = (d: Items): string => d.items.name;
// @ts-expect-error: no host other than those learned
export type Other = ObservedData["structured-data-fetch"]["other.example.com"];
