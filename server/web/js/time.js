// Times on the page: 24-hour ISO 8601 in the server's configured zone
// (page.json's time_zone, default UTC), never the browser's 12-hour clock.
// A control room reads one clock; the zone is shown in the header.

let zone = "UTC";
let parts = formatter(zone);

function formatter(z) {
  return new Intl.DateTimeFormat("en-GB", {
    timeZone: z, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit",
  });
}

// setZone sets the zone times are shown in; an unknown name keeps UTC.
export function setZone(z) {
  try {
    parts = formatter(z);
    zone = z;
  } catch {
    zone = "UTC";
    parts = formatter(zone);
  }
}

export function timeZone() { return zone; }

function fields(t) {
  const d = t instanceof Date ? t : new Date(t);
  if (isNaN(d)) return null;
  const f = {};
  for (const p of parts.formatToParts(d)) f[p.type] = p.value;
  return f;
}

// clock is "14:30:05".
export function clock(t) {
  const f = fields(t);
  return f ? `${f.hour}:${f.minute}:${f.second}` : "";
}

// date is "2026-11-27".
export function date(t) {
  const f = fields(t);
  return f ? `${f.year}-${f.month}-${f.day}` : "";
}

// stamp is "2026-11-27 14:30:05".
export function stamp(t) {
  const f = fields(t);
  return f ? `${f.year}-${f.month}-${f.day} ${f.hour}:${f.minute}:${f.second}` : "";
}
