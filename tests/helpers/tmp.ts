// Temporary directories for tests, removed after the run (tests/setup.ts registers the
// clean-up for the whole run), so runs do not pile up data directories and built
// executables under /tmp.

import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

const dirs: string[] = [];

export function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

export function removeTempDirs(): void {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** Every file below `root` (none if it does not exist), as paths relative to it, sorted. */
export function filesBelow(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    if (!existsSync(d)) return;
    for (const f of readdirSync(d, { withFileTypes: true }))
      f.isDirectory() ? walk(join(d, f.name)) : out.push(relative(root, join(d, f.name)));
  };
  walk(root);
  return out.sort();
}
