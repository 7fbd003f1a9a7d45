/**
 * Run as a process of its own: starts a call to an address where nothing listens, so the client
 * schedules a retry; closes the connection once the first attempt has failed, before that retry
 * fires (about 170 ms later); prints how the call ended, then how a call made after the close
 * ends.
 * argv: the address, then `guarded` (Steward's interceptors) or `default` (the client's own).
 */
import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import { Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { connectionInterceptors } from '../../src/temporal/open-connection';

async function main(): Promise<void> {
  const [address, mode] = process.argv.slice(2);
  let failedOnce!: () => void;
  const firstFailure = new Promise<void>((resolve) => (failedOnce = resolve));
  // Nearest the channel, so it sees every attempt end.
  const watch: Interceptor = (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start(metadata, _listener, next) {
        next(metadata, {
          onReceiveStatus(status, nextStatus) {
            failedOnce();
            nextStatus(status);
          },
        });
      },
    });
  const interceptors =
    mode === 'guarded'
      ? [...connectionInterceptors(), watch]
      : [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), watch];
  // Its own interceptors: the watch, and in default mode the client's without the guard.
  // eslint-disable-next-line no-restricted-syntax
  const connection = await Connection.lazy({ address, interceptors });
  const call = connection.workflowService.getSystemInfo({}).then(() => 'answered', report);
  await firstFailure;
  await connection.close();
  console.log(await call);
  console.log(await connection.workflowService.getSystemInfo({}).then(() => 'answered', report));
}

function report(err: { code?: number; details?: string; message?: string }): string {
  return err.code === undefined ? `threw: ${err.message}` : `rejected ${err.code}: ${err.details}`;
}

void main();
