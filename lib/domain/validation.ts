import { isIP } from 'node:net';

/**
 * Syntax rules for what agents and operators send, as Kubernetes and Istio define them, so an
 * entry accepted here is also a valid Kubernetes object. Each check answers yes or no; the
 * protocol layer turns a no into a message naming the field and the value.
 */

// A DNS-1123 label: lower case alphanumerics and '-', alphanumeric at both ends.
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
// Kubernetes "qualified name" part, also the label value syntax (but a value may be empty).
const QUALIFIED_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

export const DNS1123_LABEL_MAX = 63;
export const DNS1123_SUBDOMAIN_MAX = 253;
export const LABEL_NAME_MAX = 63;
export const LABEL_VALUE_MAX = 63;
/** region/zone/subzone, as Istio's locality. */
export const LOCALITY_MAX_PARTS = 3;

/** Namespaces are DNS-1123 labels: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters. */
export function isDns1123Label(text: string): boolean {
  return text.length <= DNS1123_LABEL_MAX && DNS1123_LABEL.test(text);
}

/** Object names (groups, entries): dot-separated DNS-1123 labels, at most 253 characters. */
export function isDns1123Subdomain(text: string): boolean {
  if (text.length === 0 || text.length > DNS1123_SUBDOMAIN_MAX) return false;
  // Kubernetes does not limit each part to 63 characters here, only the whole.
  return text.split('.').every((part) => /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(part));
}

/** An IPv4 or IPv6 address (no CIDR, no port, no IPv6 zone: the mesh dials it as is). */
export function isIpAddress(text: string): boolean {
  return isIP(text) !== 0 && !text.includes('%');
}

/** A label key: `[prefix/]name`, prefix a DNS-1123 subdomain, name a qualified name <= 63. */
export function isLabelKey(text: string): boolean {
  const slash = text.indexOf('/');
  const prefix = slash === -1 ? undefined : text.slice(0, slash);
  const name = slash === -1 ? text : text.slice(slash + 1);
  if (prefix !== undefined && !isDns1123Subdomain(prefix)) return false;
  return name.length <= LABEL_NAME_MAX && QUALIFIED_NAME.test(name);
}

/** A label value: empty, or a qualified name of at most 63 characters. */
export function isLabelValue(text: string): boolean {
  return text === '' || (text.length <= LABEL_VALUE_MAX && QUALIFIED_NAME.test(text));
}

/**
 * A locality `region[/zone[/subzone]]`. Istio also projects it into the `istio-locality`
 * label (with '/' replaced by '.'), so each part must be usable in a label value.
 */
export function isLocality(text: string): boolean {
  const parts = text.split('/');
  return (
    parts.length <= LOCALITY_MAX_PARTS &&
    parts.every((part) => part.length <= LABEL_VALUE_MAX && QUALIFIED_NAME.test(part))
  );
}

/** A network name: it becomes part of the entry name and a label-like value in Istio. */
export function isNetworkName(text: string): boolean {
  return text.length <= LABEL_VALUE_MAX && QUALIFIED_NAME.test(text);
}
