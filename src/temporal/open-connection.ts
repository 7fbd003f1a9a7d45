/**
 * Every gRPC connection Steward opens to Temporal, so each closes without a crash.
 *
 * The client retries a failed call (the server restarting, say) from a timer, and closing the
 * connection does not clear that timer (@temporalio/client 1.24). When it fires after the close,
 * gRPC throws "Channel has been shut down" inside the timer, outside any promise: an uncaught
 * exception that ends the process (in a test run, the suite that happens to be running then).
 * Here that retry ends the call instead, as cancelled, and the caller's promise rejects.
 */
import {
  InterceptingCall,
  Metadata,
  status,
  type Interceptor,
  type InterceptingListener,
  type NextCall,
} from '@grpc/grpc-js';
import {
  Connection,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
  type ConnectionOptions,
} from '@temporalio/client';

/** What gRPC throws when a call starts on a closed channel. */
const SHUT_DOWN = 'Channel has been shut down';

/** A Temporal connection with the client's default retries, safe to close mid-retry. */
export function openConnection(options: ConnectionOptions): Promise<Connection> {
  // eslint-disable-next-line no-restricted-syntax -- the one place that may
  return Connection.connect({ ...options, interceptors: connectionInterceptors() });
}

/** {@link openConnection}, without waiting: it dials on its first call. */
export function lazyConnection(options: ConnectionOptions): Connection {
  // eslint-disable-next-line no-restricted-syntax -- the one place that may
  return Connection.lazy({ ...options, interceptors: connectionInterceptors() });
}

/**
 * The client's default retry, then the guard below it, which each attempt (retries included)
 * passes through on its way to the channel.
 */
export function connectionInterceptors(): Interceptor[] {
  return [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), closedChannelGuard];
}

/** A call that would start on a closed channel ends at once, cancelled, rather than throw. */
const closedChannelGuard: Interceptor = (options, nextCall) => {
  try {
    return new InterceptingCall(nextCall(options));
  } catch (err) {
    if ((err as Error).message !== SHUT_DOWN) throw err;
    return new InterceptingCall(cancelledCall());
  }
};

/**
 * A unary call that ends with CANCELLED as soon as it starts; not retried by the client. Like
 * gRPC's own unary call, it hands on an empty message before the status: the client's retry
 * interceptor relies on that.
 */
function cancelledCall(): ReturnType<NextCall> {
  return {
    start(_metadata: Metadata, listener?: Partial<InterceptingListener>) {
      process.nextTick(() => {
        listener?.onReceiveMessage?.(null);
        listener?.onReceiveStatus?.({
          code: status.CANCELLED,
          details: SHUT_DOWN,
          metadata: new Metadata(),
        });
      });
    },
    cancelWithStatus: () => undefined,
    getPeer: () => '',
    sendMessageWithContext: () => undefined,
    sendMessage: () => undefined,
    startRead: () => undefined,
    halfClose: () => undefined,
    getAuthContext: () => null,
  };
}
