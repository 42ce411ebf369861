// The ceiling of the HTTP figures: bare uWebSockets.js on the same host, driven by the same wrk
// (its routes: echo-routes.mjs).
// usage: node bench/node/echo-server.mjs PORT   (answers /healthz 200; SIGTERM stops it)
import uWS from 'uWebSockets.js';
import { echoRoutes } from './echo-routes.mjs';

const port = Number(process.argv[2] ?? 9001);
const app = echoRoutes(uWS.App());
app.get('/healthz', (res) => void res.end('ok'));

app.listen('127.0.0.1', port, (token) => {
  if (!token) {
    console.error(`echo-server: cannot listen on 127.0.0.1:${port}`);
    process.exit(1);
  }
  console.log(`echo-server: listening on http://127.0.0.1:${port}`);
});
const stop = () => {
  app.close?.();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
