// The shape of one accepted, enriched event as it enters the event store: the narrow
// interface between ingest and storage. Strings are "" when unknown; numbers are finite.

export const STRING_DIMS = [
  "country",
  "platform",
  "os_name",
  "os_version",
  "app_version",
  "app_build",
  "device_model",
  "locale",
  "sdk",
  "browser",
  "device_type",
  "pathname",
  "hostname",
  "referrer",
  "referrer_source",
  "utm_source",
  "utm_medium",
  "utm_campaign",
  "utm_content",
  "utm_term",
] as const;
export type StringDim = (typeof STRING_DIMS)[number];

export interface StoredEvent {
  app: number;
  /** Event time, ms since the epoch (UTC). */
  ts: number;
  name: string;
  /** Session: a 53-bit hash (apps: of the client's session id; web: derived on the server). */
  session: number;
  /** Daily-rotating visitor: a 53-bit hash of that day's salt, app, address and agent. */
  visitor: number;
  debug: boolean;
  dims: Record<StringDim, string>;
  /** Text properties (booleans as "true"/"false"), cut at 256 characters. */
  sp: Record<string, string>;
  /** Number properties, finite. */
  np: Record<string, number>;
}

// A literal (not built from STRING_DIMS) because it is made once per event on the hot path.
export const emptyDims = (): Record<StringDim, string> => ({
  country: "",
  platform: "",
  os_name: "",
  os_version: "",
  app_version: "",
  app_build: "",
  device_model: "",
  locale: "",
  sdk: "",
  browser: "",
  device_type: "",
  pathname: "",
  hostname: "",
  referrer: "",
  referrer_source: "",
  utm_source: "",
  utm_medium: "",
  utm_campaign: "",
  utm_content: "",
  utm_term: "",
});
