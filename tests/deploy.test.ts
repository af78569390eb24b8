// The deployment files of docs/operations.md, checked as an operator would use them: the
// systemd unit parses (systemd-analyze verify, when installed) and says what the guide says
// it does, its Environment= lines are options Sextant accepts, and a server started with
// them works behind each TLS proxy example (nginx, Caddy, when installed) over real TLS:
// the sign-in link names the https address, the session cookie is Secure, the tracker and
// its events go through the proxy, and a client cannot choose its address or country
// through it.

import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync, type Subprocess } from "bun";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createServer } from "node:net";
import { loadConfig, OPTIONS } from "../src/infra/config.ts";
import { spawnSextant, type Proc } from "./helpers/process.ts";
import { removeTempDirs, tempDir } from "./helpers/tmp.ts";

const ROOT = join(import.meta.dir, "..");
const UNIT = join(ROOT, "deploy/sextant.service");
const NGINX = join(ROOT, "deploy/nginx.conf");
const CADDY = join(ROOT, "deploy/Caddyfile");

afterAll(() => removeTempDirs());

const which = (cmd: string) => Bun.which(cmd, { PATH: `${process.env.PATH}:/usr/sbin:/sbin` });

/** A unit file as systemd reads it: sections of key=value lines, # and ; comments. Throws on any other line. */
function parseUnit(text: string): Map<string, [string, string][]> {
  const sections = new Map<string, [string, string][]>();
  let current: [string, string][] | null = null;
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) return;
    const section = /^\[([A-Za-z]+)\]$/.exec(line);
    if (section) {
      current = [];
      sections.set(section[1]!, current);
      return;
    }
    const kv = /^([A-Za-z][A-Za-z0-9]*)=(.*)$/.exec(line);
    if (!kv || !current) throw new Error(`line ${i + 1} is neither a section, a comment nor key=value: ${raw}`);
    current.push([kv[1]!, kv[2]!]);
  });
  return sections;
}

const values = (unit: Map<string, [string, string][]>, section: string, key: string) =>
  (unit.get(section) ?? []).filter(([k]) => k === key).map(([, v]) => v);
const one = (unit: Map<string, [string, string][]>, section: string, key: string) => {
  const v = values(unit, section, key);
  expect(v.length, `${section}.${key} set once`).toBe(1);
  return v[0]!;
};

/** The unit's Environment= lines as a map (one NAME=value per line, as the file writes them). */
function unitEnv(unit: Map<string, [string, string][]>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const v of values(unit, "Service", "Environment")) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(v);
    if (!m) throw new Error(`Environment=${v}: not NAME=value`);
    env[m[1]!] = m[2]!;
  }
  return env;
}

/**
 * systemd-analyze verify on a copy of the unit whose ExecStart names an executable that
 * exists here (verify checks the path). Its exit code is 0 even for unknown keys or bad
 * values (it warns and ignores them), so any output counts as a failure.
 */
function verify(unitText: string): { code: number; out: string } {
  const dir = tempDir("sextant-unit-");
  const stub = join(dir, "sextant");
  writeFileSync(stub, "#!/bin/sh\n");
  chmodSync(stub, 0o755);
  const file = join(dir, "sextant.service");
  writeFileSync(file, unitText.replace(/^ExecStart=\/usr\/local\/bin\/sextant/m, `ExecStart=${stub}`));
  const r = spawnSync([which("systemd-analyze")!, "verify", file], { cwd: dir, env: { ...process.env, SYSTEMD_LOG_COLOR: "0" } });
  return { code: r.exitCode, out: (r.stdout.toString() + r.stderr.toString()).trim() };
}

describe("the systemd unit (deploy/sextant.service)", () => {
  const text = readFileSync(UNIT, "utf8");
  const unit = parseUnit(text);

  test("runs as its own user, with its data directory, restarts on failure, waits for the orderly stop", () => {
    expect(one(unit, "Service", "User")).toBe("sextant");
    expect(one(unit, "Service", "Group")).toBe("sextant");
    expect(one(unit, "Service", "ExecStart")).toBe("/usr/local/bin/sextant serve");
    expect(one(unit, "Service", "StateDirectory")).toBe("sextant");
    expect(one(unit, "Service", "StateDirectoryMode")).toBe("0700");
    expect(unitEnv(unit).SEXTANT_DATA_DIR).toBe("/var/lib/sextant");
    expect(one(unit, "Service", "Restart")).toBe("on-failure");
    // Exit code 2 is a bad option or a newer data directory: a restart loop would not mend it.
    expect(one(unit, "Service", "RestartPreventExitStatus")).toBe("2");
    const stop = /^(\d+)s$/.exec(one(unit, "Service", "TimeoutStopSec"));
    expect(stop && Number(stop[1])).toBeGreaterThanOrEqual(60);
    expect(one(unit, "Install", "WantedBy")).toBe("multi-user.target");
  });

  test("hardening that leaves the server working: read-only system, no privileges, no W^X rule that stops the JIT", () => {
    expect(one(unit, "Service", "ProtectSystem")).toBe("strict");
    expect(one(unit, "Service", "NoNewPrivileges")).toBe("yes");
    expect(one(unit, "Service", "PrivateTmp")).toBe("yes");
    expect(one(unit, "Service", "CapabilityBoundingSet")).toBe("");
    expect(values(unit, "Service", "MemoryDenyWriteExecute")).toEqual([]);
    // The built-in backup job's destination, optional ("-") so the unit starts without it.
    expect(values(unit, "Service", "ReadWritePaths")).toContain("-/var/backups/sextant");
  });

  test("every SEXTANT_* variable it sets is an option, and Sextant accepts the values", () => {
    const env = unitEnv(unit);
    const known = new Set(OPTIONS.map((o) => o.env));
    const ours = Object.keys(env).filter((k) => k.startsWith("SEXTANT_"));
    expect(ours.length).toBeGreaterThanOrEqual(8);
    for (const k of ours) expect(known.has(k), `${k} is an option of src/infra/config.ts`).toBe(true);
    const c = loadConfig([], env);
    expect(c).toMatchObject({
      dataDir: "/var/lib/sextant",
      host: "127.0.0.1",
      port: 8080,
      trustProxy: true,
      log: "json",
      publicUrl: "https://stats.example.com",
    });
    expect(env.BUN_JSC_useWarmUpMarkedBlocks).toBe("0");
  });

  test("systemd-analyze verify accepts it (and does reject a broken copy)", () => {
    if (!which("systemd-analyze")) {
      console.warn("deploy.test: systemd-analyze is not installed; the unit's syntax was checked by this test's own parser only");
      return;
    }
    const ok = verify(text);
    expect(ok.out).toBe("");
    expect(ok.code).toBe(0);
    // The same check on a copy with a bad value and an unknown key: it must complain.
    const bad = verify(
      text.replace("Restart=on-failure", "Restart=sometimes").replace("NoNewPrivileges=yes", "NoNewPrivileges=yes\nProtectEverything=yes"),
    );
    expect(bad.out).toContain("sometimes");
    expect(bad.out).toContain("ProtectEverything");
  });
});

// ---------------------------------------------------------------------------------------
// The guide itself: what it names exists

describe("the guide (docs/operations.md)", () => {
  const guide = readFileSync(join(ROOT, "docs/operations.md"), "utf8");

  test("README's Running it section links to it, and its own relative links resolve", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    expect(readme).toContain("## Running it");
    expect(readme).toContain("(docs/operations.md)");
    const links = [...guide.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/.test(l));
    expect(links.length).toBeGreaterThanOrEqual(5);
    for (const l of links) expect(existsSync(join(ROOT, "docs", l)), `${l} exists`).toBe(true);
  });

  test("every SEXTANT_* variable, sextant command and flag it uses is one Sextant has", () => {
    const known = new Set(OPTIONS.map((o) => o.env));
    const vars = new Set([...guide.matchAll(/\bSEXTANT_[A-Z_]+[A-Z]\b/g)].map((m) => m[0]));
    for (const v of vars) expect(known.has(v), `${v} is an option of src/infra/config.ts`).toBe(true);

    const flags = new Set<string>([...OPTIONS.map((o) => o.flag), "--incremental", "--force", "--help", "--version"]);
    const commands = new Set(["serve", "backup", "restore", "org", "generate", "--help", "--version"]);
    // Lines of the fenced code blocks where sextant is the program run (at the start of the
    // line, after sudo -u sextant, or by its installed path), up to a redirection or comment.
    const code: string[] = [];
    let inBlock = false;
    for (const line of guide.split("\n")) {
      if (line.trim().startsWith("```")) inBlock = !inBlock;
      else if (inBlock) code.push(line.trim());
    }
    const uses = code.flatMap((l) => {
      const m = /(?:^|sudo -u sextant |\/usr\/local\/bin\/)sextant ((?:[a-z]|--)[^>#|&]*)/.exec(l);
      return m ? [m[1]!.trim()] : [];
    });
    expect(uses.length).toBeGreaterThanOrEqual(8);
    for (const use of uses) {
      const words = use.split(/\s+/);
      expect(commands.has(words[0]!), `sextant ${use}: a command`).toBe(true);
      for (const w of words.filter((x) => x.startsWith("--")))
        expect(flags.has(w.split("=")[0]!), `sextant ${use}: ${w} is a flag`).toBe(true);
    }
  });

  test("every metric it names is one /metrics serves", () => {
    const source = readFileSync(join(ROOT, "src/http/metrics.ts"), "utf8");
    const named = new Set([...guide.matchAll(/\bsextant_[a-z_]+[a-z]\b/g)].map((m) => m[0]).filter((n) => n !== "sextant_session"));
    expect(named.size).toBeGreaterThanOrEqual(8);
    for (const n of named) expect(source.includes(`"${n}"`), `${n} is served by src/http/metrics.ts`).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------
// Behind the proxies

const CHROME = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
// A GB address in the GeoIP test data (tests/http/ingest-web.test.ts uses it too).
const GB_IP = "81.2.69.160";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function waitFor(url: string, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      await fetch(url, { tls: { rejectUnauthorized: false }, redirect: "manual" });
      return;
    } catch (e) {
      if (Date.now() > until) throw new Error(`${url} did not answer in ${ms} ms: ${(e as Error).message}`);
      await Bun.sleep(100);
    }
  }
}

interface Proxy {
  name: string;
  available: () => string | null;
  /** Checks the example as the operator would (nginx -t, caddy validate); returns the command's output. */
  check(dir: string, httpPort: number, tlsPort: number, upstream: number): { code: number; out: string };
  start(dir: string, httpPort: number, tlsPort: number, upstream: number): Subprocess;
}

/** The nginx example with this machine's ports and a self-signed certificate, inside a minimal nginx.conf. */
function nginxConf(dir: string, httpPort: number, tlsPort: number, upstream: number): string {
  const cert = join(dir, "cert.pem");
  const key = join(dir, "key.pem");
  if (!existsSync(cert)) {
    const r = spawnSync([
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-subj",
      "/CN=localhost",
      "-days",
      "1",
      "-keyout",
      key,
      "-out",
      cert,
    ]);
    if (r.exitCode !== 0) throw new Error(`openssl: ${r.stderr}`);
  }
  const site = readFileSync(NGINX, "utf8")
    .replace("/etc/letsencrypt/live/stats.example.com/fullchain.pem", cert)
    .replace("/etc/letsencrypt/live/stats.example.com/privkey.pem", key)
    .replace("server 127.0.0.1:8080;", `server 127.0.0.1:${upstream};`)
    .replace(/^\s*listen \[::\]:.*$/gm, "")
    .replace("listen 80;", `listen 127.0.0.1:${httpPort};`)
    .replace("listen 443 ssl http2;", `listen 127.0.0.1:${tlsPort} ssl http2;`)
    .replace(/server_name stats\.example\.com;/g, "server_name localhost;");
  // Each replacement must have hit: a changed example must change this test too.
  for (const gone of ["letsencrypt", "127.0.0.1:8080", "listen 80;", "listen 443"])
    if (site.includes(gone)) throw new Error(`nginx.conf still has ${gone}`);
  writeFileSync(join(dir, "sextant-site.conf"), site);
  for (const t of ["body", "proxy", "fastcgi", "uwsgi", "scgi"]) mkdirSync(join(dir, t), { recursive: true });
  // Run as root (as here), nginx's workers would run as nobody and could not write request
  // bodies into this test's private directory; on a server they use /var/lib/nginx.
  const user = process.getuid?.() === 0 ? "user root;\n" : "";
  const main = `${user}daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events {}
http {
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  include ${dir}/sextant-site.conf;
}
`;
  const file = join(dir, "nginx.conf");
  writeFileSync(file, main);
  return file;
}

/** The Caddyfile with this machine's ports and Caddy's own local CA instead of a public one. */
function caddyfile(dir: string, httpPort: number, tlsPort: number, upstream: number): string {
  const site = readFileSync(CADDY, "utf8")
    .replace("stats.example.com {", `https://localhost:${tlsPort} {\n\ttls internal`)
    .replace("reverse_proxy 127.0.0.1:8080", `reverse_proxy 127.0.0.1:${upstream}`);
  if (site.includes("stats.example.com {") || site.includes("127.0.0.1:8080")) throw new Error("Caddyfile replacements missed");
  const file = join(dir, "Caddyfile");
  writeFileSync(
    file,
    `{\n\tadmin off\n\tskip_install_trust\n\thttp_port ${httpPort}\n\thttps_port ${tlsPort}\n\tstorage file_system ${dir}/caddy-data\n}\n\n${site}`,
  );
  return file;
}

const caddyEnv = (dir: string) => ({
  ...process.env,
  HOME: dir,
  XDG_DATA_HOME: join(dir, "xdg-data"),
  XDG_CONFIG_HOME: join(dir, "xdg-config"),
});

const PROXIES: Proxy[] = [
  {
    name: "nginx (deploy/nginx.conf)",
    available: () => (which("nginx") && which("openssl") ? null : "nginx or openssl is not installed"),
    check(dir, h, t, u) {
      const r = spawnSync([which("nginx")!, "-t", "-p", dir, "-c", nginxConf(dir, h, t, u)]);
      return { code: r.exitCode, out: r.stderr.toString() };
    },
    start: (dir, h, t, u) => Bun.spawn([which("nginx")!, "-p", dir, "-c", nginxConf(dir, h, t, u)], { stdout: "ignore", stderr: "pipe" }),
  },
  {
    name: "Caddy (deploy/Caddyfile)",
    available: () => (which("caddy") ? null : "caddy is not installed"),
    check(dir) {
      // The example itself, as shipped: validate needs no network and obtains no certificate.
      const r = spawnSync([which("caddy")!, "validate", "--config", CADDY, "--adapter", "caddyfile"], { env: caddyEnv(dir) });
      return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() };
    },
    start: (dir, h, t, u) =>
      Bun.spawn([which("caddy")!, "run", "--config", caddyfile(dir, h, t, u), "--adapter", "caddyfile"], {
        env: caddyEnv(dir),
        stdout: "ignore",
        stderr: "pipe",
      }),
  },
];

const procs: Subprocess[] = [];
const servers: Proc[] = [];
afterAll(async () => {
  for (const p of procs) {
    p.kill("SIGTERM");
    await p.exited;
  }
  for (const s of servers) if (s.proc.exitCode === null) await s.signal("SIGTERM");
});

for (const proxy of PROXIES) {
  const missing = proxy.available();
  describe(`behind ${proxy.name}`, () => {
    if (missing) {
      test.skip(`skipped: ${missing}`, () => {});
      console.warn(`deploy.test: ${missing}; the ${proxy.name} example was not checked`);
      return;
    }

    test("the example passes its own check, and over TLS: https links, a Secure cookie, tracker and events through it, no client-chosen address or country", async () => {
      const dir = tempDir("sextant-proxy-");
      const [httpPort, tlsPort, upstream] = [await freePort(), await freePort(), await freePort()];
      const base = `https://localhost:${tlsPort}`;

      const checked = proxy.check(dir, httpPort, tlsPort, upstream);
      expect(checked.code, checked.out).toBe(0);

      // Sextant with the unit's own environment; only where it keeps data, its port and
      // the public URL (this proxy's) differ.
      const env = unitEnv(parseUnit(readFileSync(UNIT, "utf8")));
      const server = await spawnSextant([process.execPath, join(ROOT, "bin/sextant.ts"), "serve"], {
        ...env,
        SEXTANT_DATA_DIR: join(dir, "data"),
        SEXTANT_PORT: String(upstream),
        SEXTANT_PUBLIC_URL: base,
      });
      servers.push(server);
      const p = proxy.start(dir, httpPort, tlsPort, upstream);
      procs.push(p);
      await waitFor(`${base}/healthz`);

      const tls = { rejectUnauthorized: false };
      const via = (path: string, init: RequestInit = {}) => fetch(base + path, { ...init, tls, redirect: "manual" } as RequestInit);
      const json = { "content-type": "application/json" };

      const health = await via("/healthz");
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: "ok" });

      // Plain HTTP is sent to https.
      const plain = await fetch(`http://localhost:${httpPort}/healthz`, { redirect: "manual" });
      expect([301, 308]).toContain(plain.status);
      expect(plain.headers.get("location")).toStartWith("https://localhost");

      // Sign-in through the proxy: the logged link names the https address.
      const email = "owner@example.com";
      expect((await via("/api/v1/auth/magic-link", { method: "POST", headers: json, body: JSON.stringify({ email }) })).status).toBe(202);
      let link = "";
      for (let i = 0; i < 50 && !link; i++) {
        link = /"link":"([^"]+)"/.exec(server.output())?.[1] ?? "";
        if (!link) await Bun.sleep(50);
      }
      expect(link).toStartWith(`${base}/auth/verify?token=`);
      const verified = await via("/api/v1/auth/verify", {
        method: "POST",
        headers: { ...json, "x-requested-with": "deploy-test" },
        body: JSON.stringify({ token: new URL(link).searchParams.get("token") }),
      });
      expect(verified.status).toBe(200);
      const setCookie = verified.headers.get("set-cookie")!;
      expect(setCookie).toStartWith("__Host-sextant_session=");
      expect(setCookie).toContain("Secure");
      expect(setCookie).toContain("HttpOnly");
      const session = { cookie: setCookie.split(";")[0]!, "x-requested-with": "deploy-test", ...json };

      const org = (await (
        await via("/api/v1/orgs", { method: "POST", headers: session, body: JSON.stringify({ name: "Org" }) })
      ).json()) as { id: number };
      const created = await via("/api/v1/apps", {
        method: "POST",
        headers: session,
        body: JSON.stringify({ org_id: org.id, kind: "web", name: "Site", origins: ["https://site.example"] }),
      });
      expect(created.status).toBe(201);
      const site = (await created.json()) as { app: { id: number }; key: string };

      // The tracker loads from the https address and posts to its origin, so through the proxy.
      const script = await via("/script.js");
      expect(script.status).toBe(200);
      expect(await script.text()).toContain('new URL(s.src).origin+"/v1/event"');

      const page = (u: string) => JSON.stringify({ k: site.key, n: "pageview", u, w: 1280 });
      const spoof = { "x-forwarded-for": GB_IP, "cf-ipcountry": "DE", "x-sextant-country": "FR" };
      const ev = await via("/v1/event", {
        method: "POST",
        headers: { "content-type": "text/plain", origin: "https://site.example", "user-agent": CHROME, ...spoof },
        body: page("https://site.example/via-proxy"),
      });
      expect(ev.status).toBe(202);
      // The control: the same headers straight to Sextant are taken (SEXTANT_TRUST_PROXY), so
      // the proxied event's country says what the proxy let through.
      const direct = await fetch(`http://127.0.0.1:${upstream}/v1/event`, {
        method: "POST",
        headers: { "content-type": "text/plain", origin: "https://site.example", "user-agent": CHROME, "cf-ipcountry": "DE" },
        body: page("https://site.example/direct"),
      });
      expect(direct.status).toBe(202);
      const day = new Date().toISOString().slice(0, 10);
      const breakdown = await via(`/api/v1/apps/${site.app.id}/breakdown?dimension=country&from=${day}&to=${day}`, { headers: session });
      expect(breakdown.status).toBe(200);
      const rows = ((await breakdown.json()) as { rows: { value: string; count: number }[] }).rows;
      expect(rows.reduce((n, r) => n + r.count, 0)).toBe(2);
      expect(rows.find((r) => r.value === "DE")?.count).toBe(1); // the direct one only
      expect(rows.map((r) => r.value)).not.toContain("GB");
      expect(rows.map((r) => r.value)).not.toContain("FR");

      // A body over Sextant's bounds but under 2 MB reaches Sextant, which answers in its own
      // words (an SDK reads them), not the proxy's HTML page.
      const native = await via("/api/v1/apps", {
        method: "POST",
        headers: session,
        body: JSON.stringify({ org_id: org.id, kind: "app", name: "App" }),
      });
      const appKey = ((await native.json()) as { key: string }).key;
      const big = await via("/v1/batch", {
        method: "POST",
        headers: { ...json, "x-app-key": appKey, "x-batch-id": crypto.randomUUID() },
        body: "x".repeat(1_500_000),
      });
      expect(big.status).toBe(413);
      expect(((await big.json()) as { error: { code: string } }).error.code).toBe("body_too_large");

      expect(await server.signal("SIGTERM")).toBe(0);
      expect(server.output()).toContain('"msg":"stopped"');
    }, 60_000);
  });
}
