// Event property rules (spec, Limits): at most 25 properties; keys 1-64 characters;
// strings cut at 256 characters; finite numbers and booleans kept; null, arrays and
// objects dropped; properties named like personal data, and values that look like an
// email address, a phone number or a UUID, dropped.

import { cutChars, withinChars } from "../util/chars.ts";

export const MAX_PROPS = 25;
export const MAX_KEY = 64;
export const MAX_STRING = 256;

/**
 * Key names treated as personal data, compared after lower-casing and removing every
 * character that is not a letter or digit ("E-Mail", "user_email" -> "email", "useremail").
 * A key is dropped when it equals one of these or ends with one of the SUFFIXES.
 */
export const PERSONAL_KEYS = new Set([
  "email",
  "mail",
  "emailaddress",
  "phone",
  "phonenumber",
  "tel",
  "telephone",
  "mobile",
  "cell",
  "name",
  "firstname",
  "lastname",
  "fullname",
  "surname",
  "givenname",
  "familyname",
  "displayname",
  "username",
  "login",
  "address",
  "street",
  "streetaddress",
  "postcode",
  "postalcode",
  "zip",
  "zipcode",
  "city",
  "ip",
  "ipaddress",
  "ipv4",
  "ipv6",
  "useragent",
  "ua",
  "userid",
  "uid",
  "deviceid",
  "idfa",
  "idfv",
  "gaid",
  "aaid",
  "advertisingid",
  "adid",
  "imei",
  "imsi",
  "macaddress",
  "mac",
  "serial",
  "serialnumber",
  "password",
  "passwd",
  "pwd",
  "secret",
  "token",
  "accesstoken",
  "apikey",
  "sessiontoken",
  "ssn",
  "socialsecurity",
  "nationalid",
  "passport",
  "taxid",
  "birthday",
  "birthdate",
  "dateofbirth",
  "dob",
  "age",
  "creditcard",
  "cardnumber",
  "ccnumber",
  "cvv",
  "iban",
  "accountnumber",
  "lat",
  "lng",
  "lon",
  "latitude",
  "longitude",
  "location",
  "geo",
  "gps",
]);
const SUFFIXES = [
  "email",
  "phone",
  "phonenumber",
  "ipaddress",
  "deviceid",
  "password",
  "token",
  "address",
  "userid",
  "lastname",
  "firstname",
  "fullname",
  "username",
];
/**
 * Last words of a key (split at `_`, `-`, `.`, spaces and camelCase) that make it personal
 * whatever comes before: `client_ip`, `userMail`. Whole words only, so `tooltip` and
 * `zip_code` are not caught by `ip`.
 */
export const PERSONAL_LAST_WORDS = new Set(["ip", "ips", "ipv4", "ipv6", "email", "emails", "mail", "phone", "phones", "tel"]);
/** A key ending in the word `name` is personal after one of these words: `customer_name`, `contactName` (not `product_name`). */
export const PERSON_WORDS = new Set([
  "user",
  "customer",
  "contact",
  "person",
  "client",
  "member",
  "owner",
  "account",
  "first",
  "last",
  "full",
  "given",
  "family",
  "middle",
  "maiden",
  "nick",
  "display",
  "real",
  "legal",
  "sender",
  "recipient",
  "billing",
  "shipping",
  "buyer",
  "seller",
  "patient",
  "employee",
  "student",
  "parent",
  "guest",
  "player",
  "holder",
  "cardholder",
  "author",
]);

/** The words of a key, lower-cased: `clientIP` -> client, ip; `user_email` -> user, email. */
function keyWords(key: string): string[] {
  return (
    key
      // The acronym with a lower-case tail would split as "I Pv4": read it as one word.
      .replace(/(?<![A-Z])IP(v[46]|s)(?![a-z])/g, "Ip$1")
      .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
      .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter((w) => w !== "")
  );
}

function isPersonalKey(key: string): boolean {
  const k = key.toLowerCase().replace(/[^a-z0-9]/g, "");
  if (PERSONAL_KEYS.has(k)) return true;
  for (const s of SUFFIXES) if (k.length > s.length && k.endsWith(s)) return true;
  const words = keyWords(key);
  const last = words[words.length - 1];
  if (last === undefined) return false;
  if (PERSONAL_LAST_WORDS.has(last)) return true;
  return last === "name" && words.length > 1 && PERSON_WORDS.has(words[words.length - 2]!);
}

const CONTROL = /[\u0000-\u001f\u007f]/;

// Apps send the same few keys over and over: decide each once.
let keyVerdicts = new Map<string, boolean>();

/** A key that is not kept: empty, too long, with control characters, or named like personal data. */
export function isRefusedKey(key: string): boolean {
  if (key.length < 1 || !withinChars(key, MAX_KEY)) return true;
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
// Not phone numbers though they fit PHONE: dates (2024-06-12, 12.06.2024, 2024.06.12).
const DATE = /^(\d{4}-\d{2}-\d{2}|\d{2}\.\d{2}\.\d{4}|\d{4}\.\d{2}\.\d{2})$/;
// A number in international form inside text ("call +44 20 7946 0958").
// A + not glued to a word, a dot or another + ("phone=+44...", "John,+44 ..." but not a
// version's "1.4.2+20240612").
const PHONE_IN_TEXT = /(?<![\w.+])\+\d[\d\s().-]{5,20}\d/;

/** True when `c` is an ASCII letter: no phone number (PHONE above) starts with one. */
const isLetter = (c: number) => (c | 32) >= 97 && (c | 32) <= 122;

export function looksPersonal(value: string): boolean {
  if (value.includes("@") && EMAIL.test(value)) return true;
  if (value.length >= 32 && UUID.test(value)) return true;
  // Most values are words ("Settings", "dark"): skip the phone pattern for them.
  if (value.length >= 7 && !isLetter(value.charCodeAt(0)) && PHONE.test(value) && !DATE.test(value)) {
    const digits = value.replace(/\D/g, "").length;
    // A bare short number ("1234567") is more often a count or id than a phone number;
    // require a + or separators unless it is long. Digits and dots alone under 10 digits
    // are a version or a decimal ("10.0.19045"); a phone number written with dots has 10
    // or more ("01.23.45.67.89").
    const dotsOnly = !/[+\s()-]/.test(value);
    if (digits >= 7 && digits <= 15 && (/[+\s().-]/.test(value) || digits >= 10) && !(dotsOnly && value.includes(".") && digits < 10))
      return true;
    return false;
  }
  if (value.length >= 9 && value.includes("+")) {
    const m = PHONE_IN_TEXT.exec(value);
    if (m) {
      const digits = m[0].replace(/\D/g, "").length;
      if (digits >= 8 && digits <= 15) return true;
    }
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
      const s = cutChars(v, MAX_STRING);
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
