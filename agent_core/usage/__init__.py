"""Usage, cost and budgets of the LLM calls the agent makes (see README "What it costs")."""
