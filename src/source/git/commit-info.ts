/**
 * The message, author and time of a raw commit object, for people: the
 * dashboard shows them beside each revision.
 */
import type { CommitInfo } from '../ports.ts';

/** `Name <email> 1700000000 +0100` -> name and email, and the time in ISO-8601 (UTC). */
function parseIdentity(value: string): { readonly who: string; readonly date: string } {
  const match = /^(.*) (\d+) ([+-]\d{4})$/.exec(value);
  if (!match) return { who: value, date: '' };
  return { who: match[1]!, date: new Date(Number(match[2]) * 1000).toISOString() };
}

/** Reads the `author` header and the message; signature headers (`gpgsig`, continued lines) are skipped. */
export function parseCommitInfo(raw: Uint8Array): CommitInfo {
  const text = new TextDecoder().decode(raw);
  const end = text.indexOf('\n\n');
  const headers = (end === -1 ? text : text.slice(0, end)).split('\n');
  const message = end === -1 ? '' : text.slice(end + 2).replace(/\n+$/, '');
  const author = headers.find((line) => line.startsWith('author '));
  const { who, date } = parseIdentity(author?.slice('author '.length) ?? '');
  return { message, author: who, date };
}
