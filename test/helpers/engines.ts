// The throwaway PostgreSQL and Redis servers of the cluster tests live in scripts/engines.ts (the
// cluster benchmark starts them too).
export * from '../../scripts/engines';
