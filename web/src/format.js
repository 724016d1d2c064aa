// format.js - how numbers, shares, amounts (samples or times), instants and durations read on the page, and parsing the times a person types.
import { format } from 'd3-format';

const int = format(',d');
export const count = (n) => int(Math.round(n || 0));
export const percent = (f) => (f >= 0.001 || f === 0 ? (100 * f).toFixed(1) : (100 * f).toPrecision(1)) + '%';
export const signed = (n) => (n > 0 ? '+' : n < 0 ? '−' : '±') + int(Math.abs(Math.round(n)));

// A profile's values count CPU samples (unit "samples") or microseconds of time (unit "microseconds":
// off-CPU and wall-clock time), as the API's "unit" field says.
export const isTime = (unit) => unit === 'microseconds';

// Three significant digits: 3.2 -> "3.20", 12.5 -> "12.5", 125 -> "125".
const sig3 = (x) => Number(x).toPrecision(3);

// Microseconds for a reader, in the largest of us, ms and s that keeps them readable, three significant
// digits past us: "850 us", "12.5 ms", "3.20 s", "42.1 s", "1,234 s".
export function time(us) {
  us = Math.max(0, Number(us) || 0);
  if (Math.round(us) < 1000) return `${Math.round(us)} us`;
  if (Number(sig3(us / 1e3)) < 1000) return `${sig3(us / 1e3)} ms`;
  const s = us / 1e6;
  return Number(sig3(s)) < 1000 ? `${sig3(s)} s` : `${int(Math.round(s))} s`;
}

// A value with its unit: "1,234 samples" (1 sample), or a time.
export const amount = (v, unit) => (isTime(unit) ? time(v) : `${count(v)} sample${Math.round(v || 0) === 1 ? '' : 's'}`);
// A value in a table cell, whose column names the unit for samples: "1,234", or a time.
export const quantity = (v, unit) => (isTime(unit) ? time(v) : count(v));
// A change: "+12", "−3", or "+12.5 ms", "−850 us", "±0".
export const signedAmount = (v, unit) => (!isTime(unit) ? signed(v)
  : (v > 0 ? '+' : v < 0 ? '−' : '±') + time(Math.abs(v)));

const pad = (n) => String(n).padStart(2, '0');

// Local "YYYY-MM-DD HH:MM:SS" of unix seconds t; withDate false leaves out the date.
export function instant(t, withDate = true) {
  const d = new Date(t * 1000);
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return withDate ? `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}` : time;
}

// "1 h 5 m", "42 s".
export function duration(s) {
  s = Math.round(s);
  const parts = [];
  for (const [u, n] of [['d', 86400], ['h', 3600], ['m', 60]]) {
    if (s >= n) {
      parts.push(`${Math.floor(s / n)} ${u}`);
      s %= n;
    }
  }
  if (s || !parts.length) parts.push(`${s} s`);
  return parts.slice(0, 2).join(' ');
}

// "2024-05-01 10:00:00 – 10:05:00 (5 m)": the date once when both ends share it.
export function span(from, to) {
  const a = instant(from), b = instant(to);
  const sameDay = a.slice(0, 10) === b.slice(0, 10);
  return `${a} – ${sameDay ? b.slice(11) : b} (${duration(to - from)})`;
}

const UNIT = { s: 1, m: 60, h: 3600, d: 86400 };

// Unix seconds from what a person types: "now", unix seconds, "-10m" (ago), a local
// "YYYY-MM-DD HH:MM[:SS]" or anything Date.parse reads (RFC 3339). NaN when unreadable.
export function parseInstant(text, now = Date.now() / 1000) {
  const s = text.trim();
  let m;
  if (s === 'now') return Math.ceil(now);
  if (/^\d{9,11}$/.test(s)) return Number(s);
  if ((m = /^-(\d+(?:\.\d+)?)\s*([smhd]?)$/.exec(s))) return Math.round(now - Number(m[1]) * UNIT[m[2] || 's']);
  if ((m = /^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d)(?::(\d\d))?$/.exec(s)))
    return new Date(+m[1], m[2] - 1, +m[3], +m[4], +m[5], +(m[6] || 0)).getTime() / 1000;
  const t = Date.parse(s);
  return Number.isNaN(t) ? NaN : Math.floor(t / 1000);
}
