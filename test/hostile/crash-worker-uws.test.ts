// The worker crash tests (crash-worker-suite.ts) on the uws front.
import { crashWorkerSuite } from './crash-worker-suite';

crashWorkerSuite('uws');
