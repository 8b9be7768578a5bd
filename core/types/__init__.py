"""Value types and protocols every floor may import: errors, messages, views, pages, the chain contract."""
