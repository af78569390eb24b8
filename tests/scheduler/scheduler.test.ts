import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Scheduler } from "../../src/scheduler/scheduler.ts";
import { createLogger } from "../../src/infra/log.ts";
import { sessionHeaders, signIn, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../helpers/smtp.ts";

describe("scheduler (driven clock)", () => {
  test("runs each job once per due time of its cron pattern, in UTC", async () => {
    const clock = new TestClock(Date.UTC(2026, 0, 1, 0, 0, 30));
    const sch = new Scheduler(createLogger("silent"), clock.now, false);
    const runs: Record<string, number[]> = { minute: [], midnight: [] };
    sch.add({ name: "minute", pattern: "0 * * * * *", run: (t) => void runs.minute!.push(t) });
    sch.add({ name: "midnight", pattern: "0 0 0 * * *", run: (t) => void runs.midnight!.push(t) });
    clock.advance(10 * 60_000);
    await sch.advanceTo(clock.ms);
    expect(runs.minute!.length).toBe(10);
    expect(runs.midnight!.length).toBe(0);
    clock.ms = Date.UTC(2026, 0, 2, 0, 0, 1);
    await sch.advanceTo(clock.ms);
    expect(runs.midnight!.length).toBe(1);
    sch.stop();
  });

  test("a failing job is logged and does not stop the others", async () => {
    const lines: string[] = [];
    const clock = new TestClock(Date.UTC(2026, 0, 1));
    const sch = new Scheduler(
      createLogger("json", (l) => lines.push(l)),
      clock.now,
      false,
    );
    let ok = 0;
    sch.add({
      name: "bad",
      pattern: "0 * * * * *",
      run: () => {
        throw new Error("boom");
      },
    });
    sch.add({ name: "good", pattern: "0 * * * * *", run: () => void ok++ });
    clock.advance(3 * 60_000);
    await sch.advanceTo(clock.ms);
    expect(ok).toBe(3);
    expect(lines.filter((l) => l.includes('"job failed"') && l.includes("boom")).length).toBe(3);
    sch.stop();
  });
});

describe("purge jobs", () => {
  let smtp: TestSmtp;
  let s: TestServer;
  const clock = new TestClock();
  let owner: Record<string, string>;
  beforeAll(async () => {
    smtp = await startSmtp();
    s = await startTestServer({ smtpUrl: smtp.url }, { clock });
    owner = sessionHeaders(await signIn(s, smtp, "purge@example.com"));
  });
  afterAll(async () => {
    await s.stop();
    await smtp.close();
  });
  const count = (sql: string, ...args: number[]) => (s.server.services.db.query(sql).get(...args) as { n: number }).n;

  test("a deleted org and everything it owns is gone within a minute", async () => {
    const { id } = (await (await s.api("/orgs", { method: "POST", json: { name: "Doomed" }, headers: owner })).json()) as { id: number };
    await s.api("/apps", { method: "POST", json: { org_id: id, kind: "app", name: "A" }, headers: owner });
    await s.api(`/orgs/${id}/tokens`, { method: "POST", json: { name: "t" }, headers: owner });
    await s.api(`/orgs/${id}`, { method: "DELETE", json: { confirm: "Doomed" }, headers: owner });
    expect(count("SELECT count(*) AS n FROM apps WHERE org_id = ?", id)).toBe(1);
    clock.advance(61_000);
    await s.server.services.scheduler.advanceTo(clock.ms);
    expect(count("SELECT count(*) AS n FROM orgs WHERE id = ?", id)).toBe(0);
    expect(count("SELECT count(*) AS n FROM apps WHERE org_id = ?", id)).toBe(0);
    expect(count("SELECT count(*) AS n FROM api_tokens WHERE org_id = ?", id)).toBe(0);
    expect(count("SELECT count(*) AS n FROM members WHERE org_id = ?", id)).toBe(0);
  });

  test("a deleted app stays restorable for 7 days, then is purged", async () => {
    const { id: org } = (await (await s.api("/orgs", { method: "POST", json: { name: "Keep" }, headers: owner })).json()) as { id: number };
    const { app } = (await (
      await s.api("/apps", { method: "POST", json: { org_id: org, kind: "app", name: "B" }, headers: owner })
    ).json()) as {
      app: { id: number };
    };
    await s.api(`/apps/${app.id}`, { method: "DELETE", headers: owner });
    clock.advance(6 * 86400_000);
    await s.server.services.scheduler.advanceTo(clock.ms);
    expect(count("SELECT count(*) AS n FROM apps WHERE id = ?", app.id)).toBe(1);
    clock.advance(86400_000 + 10 * 60_000);
    await s.server.services.scheduler.advanceTo(clock.ms);
    expect(count("SELECT count(*) AS n FROM apps WHERE id = ?", app.id)).toBe(0);
    expect(count("SELECT count(*) AS n FROM app_keys WHERE app_id = ?", app.id)).toBe(0);
  });

  test("expired sign-in links and sessions are purged", async () => {
    await s.api("/auth/magic-link", { method: "POST", json: { email: "old@example.com" } });
    expect(count("SELECT count(*) AS n FROM login_links WHERE email = 'old@example.com'")).toBe(1);
    clock.advance(31 * 86400_000);
    await s.server.services.scheduler.advanceTo(clock.ms);
    expect(count("SELECT count(*) AS n FROM login_links")).toBe(0);
    expect(count("SELECT count(*) AS n FROM sessions")).toBe(0);
  });
});
