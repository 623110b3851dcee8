/**
 * How long an AWS SDK client waits on the network before it gives up a
 * request (and retries it, as the SDK does). Without these the SDK's Node
 * handler waits forever: a connection that is accepted and then never
 * answered (a stuck load balancer, a half-dead S3-compatible server) would
 * hold a function until its own timeout with no log line. The idle bound
 * is per socket, so a large artifact that keeps arriving is never cut off.
 */
export interface AwsRequestTimeouts {
  /** Connecting (TCP and TLS) may take this long. */
  readonly connectionTimeout: number;
  /** A connection may be silent this long while a request is in flight. */
  readonly socketTimeout: number;
}

export const AWS_REQUEST_TIMEOUTS: AwsRequestTimeouts = {
  connectionTimeout: 5_000,
  socketTimeout: 30_000,
};
