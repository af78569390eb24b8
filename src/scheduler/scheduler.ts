// The built-in scheduler: named jobs on cron patterns (croner, UTC). In production croner
// fires them on time; tests call advanceTo(ms) with a driven clock, and the same croner
// patterns decide which runs fall due, so nothing waits on real time.
// A job never overlaps itself (croner's protect, and a running flag for driven runs).

import { Cron } from "croner";
import type { Logger } from "../infra/log.ts";

const MAX_CATCH_UP = 50;

export interface JobSpec {
  name: string;
  /** Cron pattern with seconds optional, evaluated in UTC. */
  pattern: string;
  run(now: number): Promise<void> | void;
}

interface Entry {
  spec: JobSpec;
  cron: Cron;
  /** Driven mode: the last instant up to which due runs were handled. */
  checkedTo: number;
  running: boolean;
}

const HEAVY = new Set(["compact", "rollups", "flush"]);

export class Scheduler {
  private entries = new Map<string, Entry>();

  constructor(
    private log: Logger,
    private now: () => number,
    /** false: croner computes times but never fires by itself (tests drive it). */
    private auto: boolean,
  ) {}

  add(spec: JobSpec): void {
    const entry: Entry = {
      spec,
      checkedTo: this.now(),
      running: false,
      cron: new Cron(spec.pattern, { timezone: "UTC", protect: true, paused: !this.auto }, () => this.runOnce(entry)),
    };
    this.entries.set(spec.name, entry);
  }

  /** Runs one job now, whatever its pattern says (also used by tests and the CLI). */
  async run(name: string): Promise<void> {
    const e = this.entries.get(name);
    if (!e) throw new Error(`no job named ${name}`);
    await this.runOnce(e);
  }

  /**
   * Driven mode: runs each job once for every due time in (checkedTo, until]. A job more
   * than MAX_CATCH_UP runs behind runs once, as a process woken after a long sleep would
   * (a week's jump would otherwise run a ten-second job 60,000 times).
   */
  async advanceTo(until: number): Promise<string[]> {
    const ran: string[] = [];
    for (const e of this.entries.values()) {
      const due: number[] = [];
      let from = new Date(e.checkedTo);
      for (;;) {
        const next = e.cron.nextRun(from);
        if (!next || next.getTime() > until) break;
        due.push(next.getTime());
        if (due.length > MAX_CATCH_UP) break;
        from = next;
      }
      const runs = due.length > MAX_CATCH_UP ? [until] : due;
      for (const t of runs) {
        e.checkedTo = t;
        await this.runOnce(e);
        ran.push(e.spec.name);
      }
      e.checkedTo = Math.max(e.checkedTo, until);
    }
    return ran;
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  stop(): void {
    for (const e of this.entries.values()) e.cron.stop();
  }

  private async runOnce(e: Entry): Promise<void> {
    if (e.running) return;
    e.running = true;
    const t0 = performance.now();
    // Only the heavy jobs announce their start (crash tests aim their kills at them); the
    // frequent light ones would fill the log.
    if (HEAVY.has(e.spec.name)) this.log.info("job started", { job: e.spec.name });
    try {
      await e.spec.run(this.now());
      this.log.info("job done", { job: e.spec.name, ms: Math.round(performance.now() - t0) });
    } catch (err) {
      this.log.error("job failed", { job: e.spec.name, error: err instanceof Error ? err.message : String(err) });
    } finally {
      e.running = false;
    }
  }
}
