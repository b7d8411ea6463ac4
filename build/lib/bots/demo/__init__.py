"""The demo every command serves by default: a sample shop database (``data``), the SQL
agent over it (``agent``) and a scripted model that answers without an API key (``model``,
writing ``answers`` from real query rows)."""
