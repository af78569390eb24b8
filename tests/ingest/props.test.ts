import { describe, expect, test } from "bun:test";
import { cleanProps, isRefusedKey, looksPersonal } from "../../src/ingest/props.ts";

describe("property values that look like personal data", () => {
  test("phone numbers, emails and UUIDs are refused; words, counts and codes are kept", () => {
    for (const v of [
      "+44 20 7946 0958",
      "(555) 123-4567",
      "555.123.4567",
      "0612345678",
      " 555 123 4567",
      "+33612345678",
      "alice@example.com",
      "mail me: bob@example.org",
      "123e4567-e89b-12d3-a456-426614174000",
      "x 123e4567e89b12d3a456426614174000",
    ]) {
      expect([v, looksPersonal(v)]).toEqual([v, true]);
    }
    for (const v of ["Settings", "dark", "Screen7", "1234567", "v2.1.0", "A1 555 123 4567", "42", "", "@home", "Premium plan"]) {
      expect([v, looksPersonal(v)]).toEqual([v, false]);
    }
  });

  test("dates and versions are not phone numbers; a number in international form inside text is", () => {
    for (const v of [
      "2024-06-12",
      "12.06.2024",
      "2024.06.12",
      "10.0.19045",
      "17.2.1.4",
      "3.14159265",
      "1,000,000",
      "+1 for this",
      "1.4.2+20240612",
      "build a+12345678",
      "v2+20240612",
    ]) {
      expect([v, looksPersonal(v)]).toEqual([v, false]);
    }
    for (const v of [
      "call +44 20 7946 0958 after six",
      "tel:+33612345678",
      "01.23.45.67.89",
      "0123456789",
      "phone=+442079460958",
      "John,+44 20 7946 0958",
      "[+44 20 7946 0958]",
    ]) {
      expect([v, looksPersonal(v)]).toEqual([v, true]);
    }
  });

  test("cleanProps drops them and keeps the rest", () => {
    expect(cleanProps({ screen: "Home", tel: "+44 20 7946 0958", n: 3, ok: true, bad: null })).toEqual({
      sp: { screen: "Home", ok: "true" },
      np: { n: 3 },
      dropped: 2,
    });
  });
});

describe("keys named like personal data", () => {
  test("exact names, known endings, and a personal last word", () => {
    for (const k of [
      "email",
      "E-Mail",
      "user_email",
      "billingAddress",
      "client_ip",
      "clientIP",
      "userIp",
      "user_mail",
      "contact.phone",
      "customer_name",
      "contactName",
      "FirstName",
      "player-name",
      "clientIPv4",
      "remoteIPv6",
      "userIPs",
      "allowedIPs",
      "IPAddress",
    ]) {
      expect([k, isRefusedKey(k)]).toEqual([k, true]);
    }
    for (const k of [
      "screen",
      "plan",
      "tooltip",
      "zip_code_valid",
      "ship",
      "product_name",
      "screen_name_shown",
      "filename",
      "event_name",
      "vip",
      "mailbox_count",
      "is_mobile",
      "VIPs",
      "numVIPs",
      "ZIPs",
    ]) {
      expect([k, isRefusedKey(k)]).toEqual([k, false]);
    }
  });
});
