"""Rules about host<->device copies and the API calls behind them."""
