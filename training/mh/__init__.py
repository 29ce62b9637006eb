"""The hybrid metric M_H (Ghandeharioun et al. 2019): proxies, leave-bot-out regression, export, self-play."""
