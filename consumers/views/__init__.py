"""Views, one module per page family; each is thin and calls selectors or services."""
