// Event property rules (spec, Limits): at most 25 properties; keys 1-64 characters;
// strings cut at 256 characters; finite numbers and booleans kept; null, arrays and
// objects dropped; properties named like personal data, and values that look like an
// email address, a phone number or a UUID, dropped.

export const MAX_PROPS = 25;
export const MAX_KEY = 64;
export const MAX_STRING = 256;

/**
 * Key names treated as personal data, compared after lower-casing and removing every
 * character that is not a letter or digit ("E-Mail", "user_email" -> "email", "useremail").
 * A key is dropped when it equals one of these or ends with one of the SUFFIXES.
 */
export const PERSONAL_KEYS = new Set([
  "email", "mail", "emailaddress", "phone", "phonenumber", "tel", "telephone", "mobile", "cell",
  "name", "firstname", "lastname", "fullname", "surname", "givenname", "familyname", "displayname", "username", "login",
  "address", "street", "streetaddress", "postcode", "postalcode", "zip", "zipcode", "city",
  "ip", "ipaddress", "ipv4", "ipv6", "useragent", "ua",
  "userid", "uid", "deviceid", "idfa", "idfv", "gaid", "aaid", "advertisingid", "adid", "imei", "imsi", "macaddress", "mac", "serial", "serialnumber",
  "password", "passwd", "pwd", "secret", "token", "accesstoken", "apikey", "sessiontoken",
  "ssn", "socialsecurity", "nationalid", "passport", "taxid",
  "birthday", "birthdate", "dateofbirth", "dob", "age",
  "creditcard", "cardnumber", "ccnumber", "cvv", "iban", "accountnumber",
  "lat", "lng", "lon", "latitude", "longitude", "location", "geo", "gps",
]);
const SUFFIXES = ["email", "phone", "phonenumber", "ipaddress", "deviceid", "password", "token", "address", "userid", "lastname", "firstname", "fullname", "username"];

function isPersonalKey(key: string): boolean {
  const k = key.toLowerCase().replace(/[^a-z0-9]/g, "");
  if (PERSONAL_KEYS.has(k)) return true;
  for (const s of SUFFIXES) if (k.length > s.length && k.endsWith(s)) return true;
  return false;
}

const CONTROL = /[\u0000-\u001f\u007f]/;

// Apps send the same few keys over and over: decide each once.
let keyVerdicts = new Map<string, boolean>();

/** A key that is not kept: empty, too long, with control characters, or named like personal data. */
export function isRefusedKey(key: string): boolean {
  if (key.length < 1 || key.length > MAX_KEY) return true;
  const hit = keyVerdicts.get(key);
  if (hit !== undefined) return hit;
  const refused = CONTROL.test(key) || isPersonalKey(key);
  if (keyVerdicts.size >= 10_000) keyVerdicts = new Map();
  keyVerdicts.set(key, refused);
  return refused;
}

const EMAIL = /[^\s@]+@[^\s@]+\.[^\s@]{2,}/;
const UUID = /[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}/i;
// 7-15 digits, optionally with +, spaces, dots, dashes and brackets, and nothing else.
const PHONE = /^\+?[\d\s().-]{7,22}$/;

/** True when `c` is an ASCII letter: no phone number (PHONE above) starts with one. */
const isLetter = (c: number) => (c | 32) >= 97 && (c | 32) <= 122;

export function looksPersonal(value: string): boolean {
  if (value.includes("@") && EMAIL.test(value)) return true;
  if (value.length >= 32 && UUID.test(value)) return true;
  // Most values are words ("Settings", "dark"): skip the phone pattern for them.
  if (value.length >= 7 && !isLetter(value.charCodeAt(0)) && PHONE.test(value)) {
    const digits = value.replace(/\D/g, "").length;
    // A bare short number ("1234567") is more often a count or id than a phone number;
    // require a + or separators unless it is long.
    if (digits >= 7 && digits <= 15 && (/[+\s().-]/.test(value) || digits >= 10)) return true;
  }
  return false;
}

export interface CleanProps {
  sp: Record<string, string>;
  np: Record<string, number>;
  dropped: number;
}

export function cleanProps(raw: unknown): CleanProps {
  const sp: Record<string, string> = {};
  const np: Record<string, number> = {};
  let kept = 0;
  let dropped = 0;
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return { sp, np, dropped };
  for (const key in raw as Record<string, unknown>) {
    const v = (raw as Record<string, unknown>)[key];
    if (kept >= MAX_PROPS || isRefusedKey(key)) {
      dropped++;
      continue;
    }
    if (typeof v === "number") {
      if (!Number.isFinite(v)) {
        dropped++;
        continue;
      }
      np[key] = v;
    } else if (typeof v === "boolean") {
      sp[key] = v ? "true" : "false";
    } else if (typeof v === "string") {
      const s = v.length > MAX_STRING ? v.slice(0, MAX_STRING) : v;
      if (looksPersonal(s)) {
        dropped++;
        continue;
      }
      sp[key] = s;
    } else {
      dropped++;
      continue;
    }
    kept++;
  }
  return { sp, np, dropped };
}
