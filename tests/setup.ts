// Preloaded by bun test (bunfig.toml): what every test run shares.

import { afterAll } from "bun:test";
import { removeTempDirs } from "./helpers/tmp.ts";

afterAll(removeTempDirs);
