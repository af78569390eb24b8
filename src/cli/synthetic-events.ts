// Realistic synthetic events for demos, tests and benchmarks (`sextant generate`):
// skewed event names, pages, countries and versions (Zipf-like), a daily activity curve,
// sessions of 1-40 events with gaps under 30 minutes, visitors that rotate daily, and a
// few funnels and paths inside (view_item -> add_to_cart -> checkout -> purchase for apps,
// / -> /pricing -> signup for sites, with drop-off at each step). Deterministic per seed.

import { emptyDims, type StoredEvent } from "../model/event.ts";
import { hash53 } from "../util/hash.ts";
import { DAY_MS, HOUR_MS } from "../util/time.ts";

export interface GenerateOptions {
  app: number;
  kind: "app" | "web";
  events: number;
  days: number;
  /** The last day generated is the one containing `end` (ms). */
  end: number;
  seed?: number;
  /** Share of sessions from debug builds or development pages. */
  debugShare?: number;
}

function rng(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    s ^= s >>> 13;
    return (s >>> 0) / 4294967296;
  };
}

/** Picks from a list with weights 1/(rank+1)^s: a few values dominate, a long tail follows. */
function zipf<T>(values: T[], s: number, r: () => number): () => T {
  const w = values.map((_, i) => 1 / (i + 1) ** s);
  const total = w.reduce((a, b) => a + b, 0);
  const cum: number[] = [];
  let acc = 0;
  for (const x of w) cum.push((acc += x / total));
  return () => {
    const u = r();
    let lo = 0;
    let hi = cum.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cum[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return values[lo]!;
  };
}

const COUNTRIES = [
  "US",
  "GB",
  "DE",
  "FR",
  "IN",
  "CA",
  "BR",
  "NL",
  "JP",
  "ES",
  "IT",
  "AU",
  "SE",
  "PL",
  "MX",
  "KR",
  "CH",
  "NO",
  "DK",
  "IE",
  "NZ",
  "AT",
  "BE",
  "FI",
  "PT",
  "CZ",
  "AR",
  "ZA",
  "SG",
  "TR",
];
const APP_EVENTS = [
  "screen_view",
  "tap",
  "open",
  "search",
  "view_item",
  "scroll",
  "share",
  "settings_open",
  "login",
  "notification_open",
  "error",
  "rate_app",
  "logout",
  "signup",
  "video_play",
];
const WEB_EVENTS = ["outbound_click", "download", "signup", "newsletter", "video_play", "search", "copy_code"];
const SCREENS = ["Home", "Search", "Item", "Cart", "Checkout", "Settings", "Profile", "Onboarding", "Library", "Player"];
const LOCALES = ["en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "pt_BR", "ja_JP", "it_IT", "nl_NL", "sv_SE"];
const IOS_MODELS = ["iPhone15,2", "iPhone14,5", "iPhone16,1", "iPhone13,2", "iPad13,4", "iPhone12,1"];
const ANDROID_MODELS = ["Pixel 8", "SM-S918B", "SM-A546B", "Pixel 7a", "M2101K6G", "CPH2449"];
const REFERRERS: [string, string][] = [
  ["", ""],
  ["google.com", "Google"],
  ["bing.com", "Bing"],
  ["news.ycombinator.com", "Hacker News"],
  ["t.co", "Twitter"],
  ["chatgpt.com", "ChatGPT"],
  ["github.com", "GitHub"],
  ["reddit.com", "Reddit"],
  ["duckduckgo.com", "DuckDuckGo"],
  ["perplexity.ai", "Perplexity"],
  ["linkedin.com", "LinkedIn"],
];

function pages(): string[] {
  const p = ["/", "/pricing", "/docs", "/blog", "/about", "/signup", "/login", "/docs/getting-started", "/docs/api", "/changelog"];
  for (let i = 1; i <= 120; i++) p.push(`/blog/post-${i}`);
  for (let i = 1; i <= 60; i++) p.push(`/docs/guide-${i}`);
  return p;
}

/** Hours of the day weighted by a smooth curve: quiet at night (UTC), busy in the afternoon. */
const HOUR_WEIGHT = Array.from({ length: 24 }, (_, h) => 0.25 + Math.sin(((h - 3) / 24) * Math.PI) ** 2);

/** Yields events session by session (each array is one session, in time order). */
export function* generate(o: GenerateOptions): Generator<StoredEvent[]> {
  const r = rng(o.seed ?? 42);
  const web = o.kind === "web";
  const debugShare = o.debugShare ?? 0.03;
  const lastDay = Math.floor(o.end / DAY_MS);
  const firstDay = lastDay - o.days + 1;
  const country = zipf(COUNTRIES, 1.1, r);
  const appEvent = zipf(APP_EVENTS, 1.0, r);
  const webEvent = zipf(WEB_EVENTS, 1.2, r);
  const page = zipf(pages(), 1.05, r);
  const screen = zipf(SCREENS, 0.9, r);
  const locale = zipf(LOCALES, 1.2, r);
  const referrer = zipf(REFERRERS, 0.8, r);
  const browser = zipf(["Chrome", "Safari", "Firefox", "Microsoft Edge", "Samsung Internet", "Opera"], 1.3, r);
  const hourCum: number[] = [];
  const hourTotal = HOUR_WEIGHT.reduce((a, b) => a + b, 0);
  let acc = 0;
  for (const w of HOUR_WEIGHT) hourCum.push((acc += w / hourTotal));
  const pickHour = () => {
    const u = r();
    let h = 0;
    while (hourCum[h]! < u) h++;
    return h;
  };
  // A pool of people; some far more active than others.
  const people = Math.max(50, Math.floor(o.events / 60));
  const person = zipf(
    Array.from({ length: Math.min(people, 200_000) }, (_, i) => i),
    0.6,
    r,
  );
  let produced = 0;
  let sessionNo = 0;
  while (produced < o.events) {
    // Days later in the window are a little busier (growth).
    const d = firstDay + Math.min(o.days - 1, Math.floor(r() ** 0.85 * o.days));
    const start = d * DAY_MS + pickHour() * HOUR_MS + Math.floor(r() * HOUR_MS);
    if (start > o.end) continue;
    const who = person();
    const visitor = hash53(`v\u0000${o.app}\u0000${who}\u0000${d}`);
    const session = hash53(`s\u0000${o.app}\u0000${o.seed ?? 42}\u0000${sessionNo++}`);
    const debug = r() < debugShare;
    const dims = emptyDims();
    dims.country = who % 17 === 0 ? "" : country();
    if (web) {
      dims.platform = "web";
      dims.browser = browser();
      const os = r();
      dims.os_name = os < 0.45 ? "Windows" : os < 0.7 ? "macOS" : os < 0.88 ? "iOS" : os < 0.97 ? "Android" : "Linux";
      dims.device_type =
        dims.os_name === "iOS" || dims.os_name === "Android" ? (r() < 0.85 ? "mobile" : "tablet") : r() < 0.6 ? "desktop" : "laptop";
      dims.hostname = "example.com";
      const [ref, source] = referrer();
      const utm = r() < 0.08;
      dims.referrer = ref;
      dims.referrer_source = utm ? "newsletter" : source;
      if (utm) {
        dims.utm_source = "newsletter";
        dims.utm_medium = "email";
        dims.utm_campaign = r() < 0.5 ? "spring-launch" : "weekly";
      }
    } else {
      const ios = r() < 0.55;
      dims.platform = ios ? "ios" : "android";
      dims.os_name = ios ? "iOS" : "Android";
      dims.os_version = ios ? ["17.4", "17.5", "18.0", "18.1"][Math.floor(r() * 4)]! : ["13", "14", "15"][Math.floor(r() * 3)]!;
      dims.device_model = ios ? IOS_MODELS[who % IOS_MODELS.length]! : ANDROID_MODELS[who % ANDROID_MODELS.length]!;
      dims.locale = locale();
      // Versions roll out over the window: later days run newer versions.
      const progress = (d - firstDay) / Math.max(1, o.days - 1);
      const v = Math.min(3, Math.floor(progress * 3 + r() * 1.2));
      dims.app_version = ["2.0.0", "2.1.0", "2.2.0", "2.3.0"][v]!;
      dims.app_build = String(200 + v * 10);
      dims.sdk = "sextant-swift/1.4.0";
      if (!ios) dims.sdk = "sextant-kotlin/1.4.0";
    }
    // 1-40 events, most sessions short.
    const length = Math.min(40, 1 + Math.floor(-Math.log(1 - r()) * 6));
    const events: StoredEvent[] = [];
    let t = start;
    const funnel = r() < 0.25;
    const stepsApp = ["view_item", "add_to_cart", "checkout", "purchase"];
    let step = 0;
    let path = web ? "/" : "";
    for (let i = 0; i < length && produced + events.length < o.events; i++) {
      let name: string;
      const sp: Record<string, string> = {};
      const np: Record<string, number> = {};
      if (web) {
        if (funnel && step < 2 && r() < 0.65) {
          path = step === 0 ? "/" : "/pricing";
          name = "pageview";
          step++;
        } else if (funnel && step === 2 && r() < 0.35) {
          name = "signup";
          sp.plan = r() < 0.8 ? "free" : "pro";
          step++;
        } else if (r() < 0.75 || i === 0) {
          name = "pageview";
          path = i === 0 && r() < 0.5 ? "/" : page();
        } else {
          name = webEvent();
          if (name === "download") sp.file = r() < 0.5 ? "sextant-linux-x64" : "sextant-macos-arm64";
        }
      } else if (funnel && step < stepsApp.length && r() < [0.9, 0.5, 0.6, 0.45][step]!) {
        name = stepsApp[step]!;
        step++;
        sp.screen = ["Item", "Cart", "Checkout", "Checkout"][step - 1]!;
        if (name === "purchase") {
          np.value = Math.round((5 + r() * 120) * 100) / 100;
          sp.currency = "EUR";
        }
      } else {
        name = i === 0 ? "open" : appEvent();
        sp.screen = screen();
        if (name === "search") np.results = Math.floor(r() * 50);
        if (name === "error") sp.code = `E${100 + Math.floor(r() * 5)}`;
      }
      if (r() < 0.3) sp.plan = r() < 0.7 ? "free" : r() < 0.8 ? "pro" : "team";
      const ed = web ? { ...dims, pathname: name === "pageview" ? path : path } : dims;
      if (web && i > 0) {
        ed.referrer = "";
        ed.referrer_source = dims.utm_source ? dims.referrer_source : "";
      }
      events.push({ app: o.app, ts: t, name, session, visitor, debug, dims: ed, sp, np });
      t += 2000 + Math.floor(-Math.log(1 - r()) * 90_000);
      if (t > o.end) break;
    }
    if (events.length === 0) continue;
    produced += events.length;
    yield events;
  }
}
