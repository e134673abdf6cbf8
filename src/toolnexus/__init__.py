"""toolnexus: one uniform Tool over every source, a tool-calling loop, durable suspension."""
