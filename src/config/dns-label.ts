const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** What a DNS-1123 label allows, for error messages. */
export const DNS_LABEL_RULE =
  'use at most 63 lowercase letters, digits and "-", starting and ending with a letter or digit';

/**
 * Whether `text` is a DNS-1123 label. Track names become the value of the
 * `driftless.dev/track` label, and namespaces must be labels, so the same rule
 * serves names throughout the config.
 */
export function isDnsLabel(text: string): boolean {
  return DNS_LABEL.test(text);
}
