"""The pages a person sees: the start page, the dashboard, the API docs, the hosted payment
page and the eWallet card form, with their templates and static files."""
