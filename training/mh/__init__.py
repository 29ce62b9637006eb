"""The hybrid metric M_H (Ghandeharioun et al. 2019): data, leave-bot-out regression, export."""
