/**
 * Which refusals count as an immutable-field change: the API server's own
 * words for each, as it answers a server-side apply. Only these make force or
 * `update-strategy: recreate` delete an object to create it again.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubernetesApiError } from '../../src/cluster/errors.ts';

const refusal = (message: string, code = 422) =>
  new KubernetesApiError('X/ns/x', { code, reason: 'Invalid', message });

describe('KubernetesApiError.isImmutableFieldChange', () => {
  it('recognizes how each kind words an immutable field', () => {
    const immutable = [
      'Secret "s" is invalid: data: Forbidden: field is immutable when `immutable` is set',
      'Job.batch "j" is invalid: spec.template: Invalid value: core.PodTemplateSpec{}: field is immutable',
      'Deployment.apps "web" is invalid: spec.selector: Invalid value: v1.LabelSelector{}: field is immutable',
      'Service "svc" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.0.0.77"}: may not change once set',
      "StatefulSet.apps \"db\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
      'PersistentVolumeClaim "data" is invalid: spec: Forbidden: spec is immutable after creation except resources.requests',
    ];
    for (const message of immutable)
      assert.equal(refusal(message).isImmutableFieldChange, true, message);
  });

  it('leaves every other refusal alone, an invalid value that names "immutable" among them', () => {
    const other = [
      'ConfigMap "a" is invalid: metadata.labels: Invalid value: "bad value!": a valid label must be an empty string or consist of alphanumeric characters',
      'Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0',
      'ConfigMap "a" is invalid: metadata.labels: Invalid value: "immutable!": a valid label must be an empty string',
    ];
    for (const message of other)
      assert.equal(refusal(message).isImmutableFieldChange, false, message);
    assert.equal(refusal('field is immutable', 409).isImmutableFieldChange, false);
  });

  it('is not an immutable-field change when another cause is refused with it', () => {
    // The API server's answer to a Service whose clusterIP and a port both change, one invalid.
    const both = new KubernetesApiError('Service/ns/web', {
      code: 422,
      reason: 'Invalid',
      message:
        'Service "web" is invalid: [spec.clusterIPs[0]: Invalid value: []string{"10.0.0.161"}: may not change once set, spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive]',
      causes: [
        {
          reason: 'FieldValueInvalid',
          message: 'Invalid value: []string{"10.0.0.161"}: may not change once set',
          field: 'spec.clusterIPs[0]',
        },
        {
          reason: 'FieldValueInvalid',
          message: 'Invalid value: 70000: must be between 1 and 65535, inclusive',
          field: 'spec.ports[0].targetPort',
        },
      ],
    });
    const immutableOnly = new KubernetesApiError('Service/ns/web', {
      ...both.status,
      causes: both.status.causes!.slice(0, 1),
    });

    assert.equal(both.isImmutableFieldChange, false);
    assert.equal(immutableOnly.isImmutableFieldChange, true);
  });
});
