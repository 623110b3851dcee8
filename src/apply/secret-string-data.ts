/**
 * A Secret's `stringData` is write-only: the server folds it into `data`
 * (base64) and never returns it, yet our field set keeps claiming
 * `f:stringData`. To compare with the live object, both the manifest and the
 * field set are read the way the server stores them: `stringData` as `data`.
 */
import { splitApiVersion, type KubeObject } from '../cluster/kube-object.ts';
import { isPlainObject, type FieldSet } from './field-set.ts';

function isSecret(object: Pick<KubeObject, 'apiVersion' | 'kind'>): boolean {
  return object.kind === 'Secret' && splitApiVersion(object.apiVersion).group === '';
}

/** The manifest with `stringData` folded into `data`, as the server stores it. */
export function manifestAsStored(object: KubeObject): KubeObject {
  if (!isSecret(object) || !isPlainObject(object.stringData)) return object;
  const { stringData, ...rest } = object;
  const encoded = Object.fromEntries(
    Object.entries(stringData).map(([key, value]) => [
      key,
      Buffer.from(String(value), 'utf8').toString('base64'),
    ]),
  );
  // stringData wins over data for the same key, as on the server.
  return { ...rest, data: { ...(isPlainObject(object.data) ? object.data : {}), ...encoded } };
}

/** The field set with `f:stringData` read as `f:data`. */
export function fieldSetAsStored(
  object: Pick<KubeObject, 'apiVersion' | 'kind'>,
  set: FieldSet | undefined,
): FieldSet | undefined {
  if (!set || !isSecret(object) || !set['f:stringData']) return set;
  const { 'f:stringData': stringData, ...rest } = set;
  return { ...rest, 'f:data': { ...rest['f:data'], ...stringData } };
}
