// Where the queue and the formed batches live between runs: the SextantStorage interface
// and its three adapters. memoryStorage (the default where nothing else exists),
// localStorageStorage (the default in browsers and Electron renderers), fileStorage(path)
// (Node, Bun, Electron's main process, Deno: one JSON file, replaced atomically by a
// write to a temporary file, an fsync and a rename, so a kill at any moment leaves the
// old content or the new, never half of one).

import { g, importModule } from "./globals.js";

export interface SextantStorage {
  get(key: string): Promise<string | null>;
  set(key: string, value: string): Promise<void>;
  remove?(key: string): Promise<void>;
  /**
   * Optional: every key held. With it (and Web Locks, in browsers) each tab keeps its own
   * queue under a key of its own and adopts the queues of tabs that went away.
   */
  keys?(): Promise<string[]>;
}

/** Kept in memory only: lost when the process ends. */
export function memoryStorage(): SextantStorage {
  const m = new Map<string, string>();
  return {
    get: async (k) => m.get(k) ?? null,
    set: async (k, v) => void m.set(k, v),
    remove: async (k) => void m.delete(k),
  };
}

/** The browser's localStorage (per origin). Throws where there is none. */
export function localStorageStorage(): SextantStorage {
  const ls = g.localStorage;
  if (!ls) throw new Error("sextant: localStorage is not available here; pass another storage");
  return {
    get: async (k) => ls.getItem(k),
    set: async (k, v) => ls.setItem(k, v),
    remove: async (k) => ls.removeItem(k),
    keys: async () => {
      const out: string[] = [];
      for (let i = 0; i < ls.length; i++) {
        const k = ls.key(i);
        if (k !== null) out.push(k);
      }
      return out;
    },
  };
}

interface FsPromises {
  readFile(path: string, enc: "utf8"): Promise<string>;
  open(
    path: string,
    flags: string,
  ): Promise<{ writeFile(data: string, enc: "utf8"): Promise<void>; sync(): Promise<void>; close(): Promise<void> }>;
  rename(from: string, to: string): Promise<void>;
  mkdir(path: string, opts: { recursive: true }): Promise<unknown>;
}

/**
 * One JSON file at `path` holding every key (Node 18+, Bun, Electron's main process, Deno
 * with its Node compatibility). Writes are queued one after another; each replaces the
 * file atomically and is on disk (fsync) when its promise resolves.
 */
export function fileStorage(path: string): SextantStorage {
  let fs: Promise<FsPromises> | null = null;
  const load = () => (fs ??= importModule<FsPromises>("node:fs/promises"));
  let data: Record<string, string> | null = null;
  let chain: Promise<unknown> = Promise.resolve();
  const read = async (): Promise<Record<string, string>> => {
    if (data) return data;
    try {
      const parsed = JSON.parse(await (await load()).readFile(path, "utf8")) as unknown;
      data = parsed && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, string>) : {};
    } catch {
      data = {};
    }
    return data;
  };
  const dir = path.replace(/[\\/][^\\/]*$/, "");
  const write = async () => {
    const f = await load();
    if (dir && dir !== path) await f.mkdir(dir, { recursive: true }).catch(() => {});
    const tmp = `${path}.${Math.random().toString(36).slice(2)}.tmp`;
    const h = await f.open(tmp, "w");
    try {
      await h.writeFile(JSON.stringify(data), "utf8");
      await h.sync();
    } finally {
      await h.close();
    }
    await f.rename(tmp, path);
    // The rename itself survives a power cut only once the directory is synced (POSIX;
    // Windows cannot open a directory, and renames there are already durable enough).
    const d = await f.open(dir && dir !== path ? dir : ".", "r").catch(() => null);
    if (d) {
      await d.sync().catch(() => {});
      await d.close();
    }
  };
  const serial = <T>(job: () => Promise<T>): Promise<T> => {
    const p = chain.then(job, job);
    chain = p.catch(() => {});
    return p;
  };
  return {
    get: (k) => serial(async () => (await read())[k] ?? null),
    set: (k, v) =>
      serial(async () => {
        (await read())[k] = v;
        await write();
      }),
    remove: (k) =>
      serial(async () => {
        delete (await read())[k];
        await write();
      }),
  };
}
