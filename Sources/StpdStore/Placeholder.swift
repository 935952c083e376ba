// Durable state in SQLite (GRDB): the implementation of the core's store protocol, its
// migrations, and the event log. Filled in by the durable-state issue.
