// An event store that keeps accepted events in memory, per app, behind the EventSink
// interface. It stands in until the columnar store (Arrow segments and Parquet
// partitions) replaces it; durability comes from the write-ahead log, replayed at start.

import type { EventSink, StoredEvent } from "./event.ts";

export class MemoryEventStore implements EventSink {
  private byApp = new Map<number, StoredEvent[]>();

  append(events: StoredEvent[]): void {
    for (const e of events) {
      let list = this.byApp.get(e.app);
      if (!list) this.byApp.set(e.app, (list = []));
      list.push(e);
    }
  }

  events(app: number): readonly StoredEvent[] {
    return this.byApp.get(app) ?? [];
  }

  count(app: number): number {
    return this.byApp.get(app)?.length ?? 0;
  }

  dropApps(apps: number[]): void {
    for (const a of apps) this.byApp.delete(a);
  }
}
