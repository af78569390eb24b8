// What the platform tells, behind small adapters: the `system` object of a batch (from
// navigator.userAgentData / userAgent in browsers, process.platform and os.release() in
// Node, Bun and Electron, Deno.build in Deno), the default storage, and the lifecycle
// hooks (page hide and visibility in browsers, beforeExit in Node and Bun). Never a
// device identifier: only the OS, its version, a model name the user agent already
// announces, the locale and the app's own version.

import { g, importModule } from "./globals.js";
import { localStorageStorage, memoryStorage, type SextantStorage } from "./storage.js";

export interface SextantSystem {
  os_name: string;
  os_version: string;
  device_model: string;
  locale: string;
  app_version: string;
  app_build: string;
  is_debug: boolean;
}

/** OS, version and model from a user agent string. */
export function parseUserAgent(ua: string): { os_name: string; os_version: string; device_model: string } {
  let m: RegExpExecArray | null;
  if ((m = /\b(iPhone|iPad|iPod)\b.*? OS (\d+(?:_\d+)*)/.exec(ua))) {
    return { os_name: m[1] === "iPad" ? "iPadOS" : "iOS", os_version: m[2]!.replace(/_/g, "."), device_model: m[1]! };
  }
  if ((m = /\bAndroid (\d+(?:\.\d+)*)(?:; ([^;)]+))?/.exec(ua))) {
    const model = (m[2] ?? "").trim();
    return {
      os_name: "Android",
      os_version: m[1]!,
      device_model: model && model !== "K" && !/^(wv|Mobile|Linux)$/.test(model) ? model.replace(/ Build\/.*$/, "") : "",
    };
  }
  if ((m = /\bWindows NT (\d+\.\d+)/.exec(ua))) return { os_name: "Windows", os_version: m[1]!, device_model: "" };
  if ((m = /\bCrOS \S+ (\d+(?:\.\d+)*)/.exec(ua))) return { os_name: "ChromeOS", os_version: m[1]!, device_model: "" };
  if ((m = /\bMac OS X (\d+(?:[_.]\d+)*)/.exec(ua))) return { os_name: "macOS", os_version: m[1]!.replace(/_/g, "."), device_model: "Mac" };
  if (/\bLinux\b/.test(ua)) return { os_name: "Linux", os_version: "", device_model: "" };
  return { os_name: "", os_version: "", device_model: "" };
}

const NODE_OS: Record<string, string> = {
  darwin: "macOS",
  win32: "Windows",
  linux: "Linux",
  android: "Android",
  freebsd: "FreeBSD",
  openbsd: "OpenBSD",
  netbsd: "NetBSD",
  sunos: "SunOS",
  aix: "AIX",
  windows: "Windows",
};

function locale(): string {
  const n = g.navigator;
  if (n?.language) return n.language;
  try {
    const l = g.Intl?.DateTimeFormat?.().resolvedOptions().locale;
    if (l) return l;
  } catch {
    // none
  }
  const env = g.process?.env;
  const raw = (env?.LC_ALL || env?.LC_MESSAGES || env?.LANG || "").replace(/[.@].*$/, "").replace("_", "-");
  return raw === "C" || raw === "POSIX" ? "" : raw;
}

/** The OS part of `system`, from whatever this platform offers. */
export async function detectSystem(): Promise<Pick<SextantSystem, "os_name" | "os_version" | "device_model" | "locale">> {
  const out = { os_name: "", os_version: "", device_model: "", locale: locale() };
  const proc = g.process;
  const isNodeLike = !!(proc?.versions?.node || proc?.versions?.bun) && typeof proc?.platform === "string";
  const inPage = !!g.document;
  if (isNodeLike && !inPage) {
    out.os_name = NODE_OS[proc!.platform!] ?? proc!.platform!;
    try {
      const os = await importModule<{ release(): string; version?(): string }>("node:os");
      // Darwin's kernel release is not the macOS version; Windows' release is "10.0.22631": keep as given.
      out.os_version = os.release();
    } catch {
      // unknown
    }
    return out;
  }
  if (g.Deno?.build?.os) {
    out.os_name = NODE_OS[g.Deno.build.os] ?? g.Deno.build.os;
    try {
      out.os_version = g.Deno.osRelease?.() ?? "";
    } catch {
      // needs --allow-sys
    }
    return out;
  }
  const ua = g.navigator?.userAgent ?? "";
  Object.assign(out, parseUserAgent(ua));
  const hinted = g.navigator?.userAgentData?.platform;
  if (hinted && !out.os_name) out.os_name = hinted === "Chrome OS" ? "ChromeOS" : hinted;
  if (!out.os_name && g.navigator?.product === "ReactNative") out.os_name = "ReactNative";
  return out;
}

/** localStorage where the platform has a usable one, else memory. */
export function defaultStorage(): SextantStorage {
  try {
    if (g.localStorage && g.document) {
      const probe = "sextant:probe";
      g.localStorage.setItem(probe, "1");
      g.localStorage.removeItem(probe);
      return localStorageStorage();
    }
  } catch {
    // private mode or disabled storage
  }
  return memoryStorage();
}

export interface LifecycleHandlers {
  /** The page is hidden or the process is about to exit: send what is queued now. */
  flushNow(): void;
  /** The app went to the background (true) or came back (false). */
  background(hidden: boolean): void;
}

/** Hooks the platform's lifecycle events; returns the function that unhooks them. */
export function hookLifecycle(h: LifecycleHandlers): () => void {
  const undo: (() => void)[] = [];
  const doc = g.document;
  const win = g.window;
  if (doc?.addEventListener && win?.addEventListener) {
    const vis = () => {
      const hidden = doc.visibilityState === "hidden";
      h.background(hidden);
      if (hidden) h.flushNow();
    };
    const hide = () => h.flushNow();
    doc.addEventListener("visibilitychange", vis);
    win.addEventListener("pagehide", hide);
    undo.push(() => {
      doc.removeEventListener?.("visibilitychange", vis);
      win.removeEventListener?.("pagehide", hide);
    });
  } else if (g.process?.on && (g.process.versions?.node || g.process.versions?.bun)) {
    const proc = g.process;
    const beforeExit = () => h.flushNow();
    proc.on!("beforeExit", beforeExit);
    undo.push(() => proc.off?.("beforeExit", beforeExit));
  } else if (g.addEventListener && g.Deno) {
    const unload = () => h.flushNow();
    g.addEventListener("beforeunload", unload);
    undo.push(() => g.removeEventListener?.("beforeunload", unload));
  }
  return () => {
    for (const f of undo) f();
  };
}
