// The time-zone field of an app (its settings and the new-app form): a free text input
// with the browser's IANA zones as suggestions (UTC first); the server checks the name
// and answers 400 invalid_timezone for one it does not know. A new app's zone defaults to
// the browser's own.

import type { ComponentChildren } from "preact";

/** The time zones this browser knows (IANA names), with UTC first: the field's suggestions. */
let zones: string[] | null = null;
function zoneNames(): string[] {
  if (zones) return zones;
  let all: string[] = [];
  try {
    all = Intl.supportedValuesOf("timeZone");
  } catch {
    // an older browser: the field still takes any name, and the server checks it
  }
  zones = ["UTC", ...all.filter((z) => z !== "UTC")];
  return zones;
}

/** This browser's own time zone (IANA name), "UTC" when it reports none or one it does not know. */
export function browserZone(): string {
  let zone: string | undefined;
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    // ICU's name for "undetermined"; a name Intl cannot use again is no better.
    if (!zone || zone === "Etc/Unknown") return "UTC";
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
  } catch {
    return "UTC";
  }
  // UTC's other spellings (the server keeps one).
  return /^(Etc\/)?(UTC|UCT|GMT|GMT[+-]0|Universal|Zulu|Greenwich)$/.test(zone) ? "UTC" : zone;
}

/** The field: a label, an input named "timezone" and its datalist of suggestions. */
export function ZoneField({ label, value, onInput }: { label: ComponentChildren; value: string; onInput: (zone: string) => void }) {
  return (
    <label>
      {label}
      <input
        name="timezone"
        list="time-zones"
        value={value}
        required
        autocomplete="off"
        spellcheck={false}
        onInput={(e) => onInput((e.target as HTMLInputElement).value)}
      />
      <datalist id="time-zones">
        {zoneNames().map((z) => (
          <option key={z} value={z} />
        ))}
      </datalist>
    </label>
  );
}
