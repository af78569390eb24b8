// Deterministic random events for storage and query tests: a seeded generator, so a
// failing test fails the same way every run.

import { emptyDims, type StoredEvent } from "../../src/model/event.ts";

export function rng(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    s ^= s >>> 13;
    return (s >>> 0) / 2 ** 32;
  };
}

export function randomEvents(
  app: number,
  count: number,
  opts: { seed?: number; start?: number; spanMs?: number; web?: boolean } = {},
): StoredEvent[] {
  const r = rng(opts.seed ?? 1);
  const start = opts.start ?? Date.UTC(2026, 10, 1);
  const span = opts.spanMs ?? 3 * 86_400_000;
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
  const out: StoredEvent[] = [];
  let session = 0;
  let left = 0;
  let t = start;
  let dims = emptyDims();
  let visitor = 0;
  let debug = false;
  while (out.length < count) {
    if (left === 0) {
      session = Math.floor(r() * 2 ** 52) + 1;
      visitor = Math.floor(r() * 5000) + 1;
      left = 1 + Math.floor(r() * 12);
      t = start + Math.floor(r() * span);
      debug = r() < 0.1;
      dims = emptyDims();
      dims.country = pick(["GB", "US", "DE", "FR", "", "JP"]);
      dims.platform = opts.web ? "web" : pick(["ios", "android"]);
      dims.os_name = opts.web ? pick(["Windows", "macOS", "iOS"]) : dims.platform === "ios" ? "iOS" : "Android";
      dims.app_version = pick(["1.0.0", "1.1.0", "2.0.0"]);
      dims.locale = pick(["en_GB", "de_DE", "fr_FR"]);
      dims.browser = opts.web ? pick(["Chrome", "Safari", "Firefox"]) : "";
      dims.referrer_source = opts.web ? pick(["", "Google", "ChatGPT", "newsletter"]) : "";
      dims.utm_campaign = pick(["", "", "spring"]);
    }
    const e: StoredEvent = {
      app,
      ts: t,
      name: pick(["pageview", "pageview", "signup", "purchase", "open", "tap"]),
      session,
      visitor,
      debug,
      dims: { ...dims, pathname: opts.web ? pick(["/", "/pricing", "/blog/a", "/blog/b", "/été"]) : "" },
      sp: r() < 0.5 ? { plan: pick(["free", "pro", "team"]), ...(r() < 0.3 ? { screen: pick(["Home", "Settings"]) } : {}) } : {},
      np: r() < 0.4 ? { value: Math.round(r() * 10000) / 100, ...(r() < 0.2 ? { count: Math.floor(r() * 10) } : {}) } : {},
    };
    out.push(e);
    left--;
    t += Math.floor(r() * 600_000);
  }
  return out;
}

/** A canonical form for comparing event sets regardless of order. */
export function canonical(events: Iterable<StoredEvent>): string[] {
  return [...events]
    .map((e) =>
      JSON.stringify([
        e.app,
        e.ts,
        e.name,
        e.session,
        e.visitor,
        e.debug,
        Object.entries(e.dims).sort(),
        Object.entries(e.sp).sort(),
        Object.entries(e.np).sort(),
      ]),
    )
    .sort();
}
