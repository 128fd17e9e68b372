// The worker crash tests (crash-worker-suite.ts) on the node front.
import { crashWorkerSuite } from './crash-worker-suite';

crashWorkerSuite('node');
