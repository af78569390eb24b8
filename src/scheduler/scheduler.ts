// The built-in scheduler: named jobs on cron patterns (croner, UTC). In production croner
// fires them on time; tests call advanceTo(ms) with a driven clock, and the same croner
// patterns decide which runs fall due, so nothing waits on real time.
// A job never overlaps itself (croner's protect, and a running flag for driven runs).

import { Cron } from "croner";
import type { Logger } from "../log.ts";

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
      cron: new Cron(spec.pattern, { timezone: "UTC", protect: true, paused: !this.auto }, () =>
        this.runOnce(entry),
      ),
    };
    this.entries.set(spec.name, entry);
  }

  /** Runs one job now, whatever its pattern says (also used by tests and the CLI). */
  async run(name: string): Promise<void> {
    const e = this.entries.get(name);
    if (!e) throw new Error(`no job named ${name}`);
    await this.runOnce(e);
  }

  /** Driven mode: runs each job once for every due time in (checkedTo, until]. */
  async advanceTo(until: number): Promise<string[]> {
    const ran: string[] = [];
    for (const e of this.entries.values()) {
      for (;;) {
        const next = e.cron.nextRun(new Date(e.checkedTo));
        if (!next || next.getTime() > until) break;
        e.checkedTo = next.getTime();
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
