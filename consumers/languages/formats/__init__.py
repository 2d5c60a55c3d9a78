"""The console's own date formats per language (settings.FORMAT_MODULE_PATH); what is not here
comes from Django's locale formats."""
