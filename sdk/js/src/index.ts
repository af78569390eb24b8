// sextant-sdk: the entry. Sends app events to a Sextant server (docs: sdk/js/README.md).
//   import { Sextant } from "sextant-sdk";
//   const sx = new Sextant({ key: "ak_...", host: "https://stats.example.com" });
//   sx.track("app_open", { screen: "home" });

export { Sextant, SDK_NAME, SDK_VERSION, MAX_BATCH_EVENTS, MAX_BATCH_BYTES, SESSION_TIMEOUT_MS } from "./client.js";
export type { SextantOptions, SextantStats } from "./client.js";
export { memoryStorage, localStorageStorage, fileStorage } from "./storage.js";
export type { SextantStorage } from "./storage.js";
export type { SextantSystem } from "./platform.js";
export { parseUserAgent } from "./platform.js";
export { cleanProps, looksPersonal, isRefusedKey, isValidName } from "./props.js";
export { uuidv4, uuidv7 } from "./ids.js";
